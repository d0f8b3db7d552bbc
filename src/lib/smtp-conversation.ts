/**
 * One SMTP conversation over a socket: commands and their replies, each read bounded by one deadline for
 * the whole conversation, end-of-stream always an error, the socket always closed (see smtp.ts for why).
 */

export class SmtpError extends Error {
  override name = "SmtpError";
}

export interface Reply {
  code: number;
  lines: string[];
}

// A reply longer than this is not SMTP; refuse it instead of buffering without end.
const MAX_REPLY_BYTES = 64 * 1024;

/** A reply as an error message. Replies often echo an address: the logger masks it, then cuts the message. */
function describe(reply: Reply): string {
  return `${reply.code} ${reply.lines.join(" ")}`.trim();
}

/** The socket's byte streams (the runtime types them loosely). */
function streamsOf(socket: Socket): [ReadableStreamDefaultReader<Uint8Array>, WritableStreamDefaultWriter<Uint8Array>] {
  const readable = socket.readable as ReadableStream<Uint8Array>;
  const writable = socket.writable as WritableStream<Uint8Array>;
  return [readable.getReader(), writable.getWriter()];
}

export class SmtpConversation {
  private socket: Socket;
  private reader: ReadableStreamDefaultReader<Uint8Array>;
  private writer: WritableStreamDefaultWriter<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private readonly encoder = new TextEncoder();
  private buffered = "";

  constructor(
    socket: Socket,
    private readonly deadline: number,
  ) {
    this.socket = socket;
    [this.reader, this.writer] = streamsOf(socket);
  }

  /** Waits for `promise` until the conversation's deadline (or `limitMs`, if sooner). */
  async within<T>(promise: Promise<T>, what: string, limitMs = Infinity): Promise<T> {
    const remaining = Math.min(this.deadline - Date.now(), limitMs);
    if (remaining <= 0) throw new SmtpError(`timed out ${what}`);
    let timer!: ReturnType<typeof setTimeout>;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new SmtpError(`timed out ${what}`)), remaining);
    });
    try {
      return await Promise.race([promise, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async readLine(what: string, limitMs?: number): Promise<string> {
    for (;;) {
      const end = this.buffered.indexOf("\n");
      if (end >= 0) {
        const line = this.buffered.slice(0, end).replace(/\r$/, "");
        this.buffered = this.buffered.slice(end + 1);
        return line;
      }
      if (this.buffered.length > MAX_REPLY_BYTES) throw new SmtpError(`reply too long ${what}`);
      const chunk = await this.within(this.reader.read(), what, limitMs);
      if (chunk.done) throw new SmtpError(`connection closed by the server ${what}`);
      this.buffered += this.decoder.decode(chunk.value, { stream: true });
    }
  }

  /** Reads one (possibly multi-line) reply: `250-first`, `250-more`, `250 last`. */
  async reply(what: string, limitMs?: number): Promise<Reply> {
    const lines: string[] = [];
    for (;;) {
      const line = await this.readLine(what, limitMs);
      const match = /^(\d{3})([ -]|$)(.*)$/.exec(line);
      if (!match) throw new SmtpError(`malformed reply ${what}`);
      lines.push(match[3] ?? "");
      if (match[2] !== "-") return { code: Number(match[1]), lines };
    }
  }

  async send(text: string, what: string): Promise<void> {
    await this.within(this.writer.write(this.encoder.encode(text)), what);
  }

  /** Sends one command line and requires a reply with one of the expected codes. */
  async command(line: string, expected: number[], what: string): Promise<Reply> {
    await this.send(`${line}\r\n`, what);
    return this.expect(expected, what);
  }

  async expect(expected: number[], what: string): Promise<Reply> {
    const reply = await this.reply(what);
    if (!expected.includes(reply.code)) throw new SmtpError(`server refused ${what}: ${describe(reply)}`);
    return reply;
  }

  /** Replaces the plain socket with its TLS upgrade (after the server's 220 to STARTTLS). */
  upgradeToTls(host: string): void {
    this.reader.releaseLock();
    this.writer.releaseLock();
    this.socket = this.socket.startTls({ expectedServerHostname: host });
    [this.reader, this.writer] = streamsOf(this.socket);
    this.buffered = "";
  }

  close(): void {
    // Errors here only mean the socket is already gone.
    this.socket.close().catch(() => {});
  }
}
