import { connect } from "cloudflare:sockets";

/**
 * A minimal SMTP submission client over `cloudflare:sockets`.
 *
 * We keep worker-mailer for building the MIME message but not for the conversation: its reply loop
 * (1.2.1) never checks for end-of-stream, so a server that hangs up mid-conversation makes it spin
 * forever on one core, no timer fires again, and the whole isolate stops serving. Here every read
 * treats end-of-stream as an error, every wait is bounded by one deadline for the whole conversation,
 * and the socket is always closed.
 */

export interface SmtpSettings {
  host: string;
  port: number;
  /** true: TLS from the first byte (port 465); false: plain, upgraded with STARTTLS when offered. */
  secure: boolean;
  username: string;
  password: string;
  /** Budget for the whole conversation, connect to QUIT. */
  timeoutMs: number;
}

export interface Envelope {
  from: string;
  to: string;
  /** The message, dot-stuffed and terminated by CRLF.CRLF. */
  data: string;
}

export class SmtpError extends Error {
  override name = "SmtpError";
}

interface Reply {
  code: number;
  lines: string[];
}

// A reply longer than this is not SMTP; refuse it instead of buffering without end.
const MAX_REPLY_BYTES = 64 * 1024;
// After the message is accepted, QUIT is a courtesy: do not wait long for its answer.
const QUIT_WAIT_MS = 1_000;

function base64(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

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

class SmtpConversation {
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

/** Parses the EHLO reply's extension lines into upper-case keywords and their parameters. */
function capabilities(ehlo: Reply): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const line of ehlo.lines.slice(1)) {
    const [keyword, ...params] = line.trim().toUpperCase().split(/\s+/);
    if (keyword) found.set(keyword, params);
  }
  return found;
}

/**
 * True for a host whose connections never leave the machine: `localhost`, 127.0.0.0/8 written as four
 * decimal numbers, and `::1`. Only these may receive credentials without TLS. Any other spelling (`0.0.0.0`,
 * `127.1`, `::ffff:127.0.0.1`, a name) counts as remote, which errs on the side of refusing.
 */
export function isLoopbackHost(host: string): boolean {
  const name = host.toLowerCase();
  if (name === "localhost" || name === "::1" || name === "[::1]") return true;
  const octets = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(name);
  return octets !== null && octets.slice(1).every((octet) => Number(octet) <= 255);
}

async function authenticate(session: SmtpConversation, caps: Map<string, string[]>, s: SmtpSettings): Promise<void> {
  const mechanisms = caps.get("AUTH") ?? [];
  if (mechanisms.includes("PLAIN")) {
    await session.command(`AUTH PLAIN ${base64(`\0${s.username}\0${s.password}`)}`, [235], "AUTH PLAIN");
  } else if (mechanisms.includes("LOGIN")) {
    await session.command("AUTH LOGIN", [334], "AUTH LOGIN");
    await session.command(base64(s.username), [334], "AUTH LOGIN (user name)");
    await session.command(base64(s.password), [235], "AUTH LOGIN (password)");
  } else {
    throw new SmtpError("the server offers neither AUTH PLAIN nor AUTH LOGIN");
  }
}

const NON_ASCII = /\P{ASCII}/u;
// Characters that would end the path of MAIL FROM or RCPT TO, or the command line itself.
const OUTSIDE_A_PATH = /[\s\p{Cc}<>]/u;

/**
 * `address` with its domain in ASCII: an internationalized domain (`bücher.example`) becomes its IDNA
 * A-labels (`xn--bcher-kva.example`), which every server and header accepts, SMTPUTF8 or not. The local
 * part is left as it is. An ASCII domain is returned untouched.
 */
export function withAsciiDomain(address: string): string {
  const at = address.lastIndexOf("@");
  const domain = address.slice(at + 1);
  if (at < 1 || !NON_ASCII.test(domain)) return address;
  // The URL parser applies IDNA (UTS #46) to a host name; what it would read as anything but a host name
  // (a port, a path, an IP address, a percent-escape) is not a domain.
  let host = "";
  if (!/[\s/?#@:[\]\\%]/.test(domain)) {
    try {
      host = new URL(`http://${domain}`).hostname;
    } catch {
      // not a host name: refused below
    }
  }
  if (!/^[a-z0-9.-]+$/.test(host) || /^[\d.]+$/.test(host)) {
    throw new SmtpError(`the domain ${domain} is not a valid internationalized domain name`);
  }
  return `${address.slice(0, at)}@${host}`;
}

/** Delivers one message. Resolves once the server has accepted it; rejects with an SmtpError otherwise. */
export async function sendMail(settings: SmtpSettings, envelope: Envelope): Promise<void> {
  const from = withAsciiDomain(envelope.from);
  const to = withAsciiDomain(envelope.to);
  if (OUTSIDE_A_PATH.test(from) || OUTSIDE_A_PATH.test(to)) {
    throw new SmtpError("an envelope address holds white space, a control character or an angle bracket");
  }
  // Only SMTPUTF8 (RFC 6531) lets a local part be more than ASCII.
  const needsSmtpUtf8 = NON_ASCII.test(from) || NON_ASCII.test(to);
  const deadline = Date.now() + settings.timeoutMs;
  const socket = connect(
    { hostname: settings.host, port: settings.port },
    { secureTransport: settings.secure ? "on" : "starttls", allowHalfOpen: false },
  );
  const session = new SmtpConversation(socket, deadline);
  try {
    await session.within(socket.opened, "connecting").catch((err: unknown) => {
      throw err instanceof SmtpError ? err : new SmtpError(`could not connect to ${settings.host}:${settings.port}`);
    });
    await session.expect([220], "greeting");
    const heloName = from.split("@").pop() || "localhost";
    let caps = capabilities(await session.command(`EHLO ${heloName}`, [250], "EHLO"));
    let encrypted = settings.secure;
    if (!encrypted && caps.has("STARTTLS")) {
      await session.command("STARTTLS", [220], "STARTTLS");
      session.upgradeToTls(settings.host);
      encrypted = true;
      caps = capabilities(await session.command(`EHLO ${heloName}`, [250], "EHLO after STARTTLS"));
    }
    // Anyone on the path would read the password: only a connection that stays on the machine may go plain.
    if (!encrypted && !isLoopbackHost(settings.host)) {
      throw new SmtpError(
        `refusing to send credentials without TLS: the server does not offer STARTTLS and ${settings.host} is not a loopback host`,
      );
    }
    if (needsSmtpUtf8 && !caps.has("SMTPUTF8")) {
      throw new SmtpError("an address has a non-ASCII local part, which needs SMTPUTF8, and the server does not offer it");
    }
    await authenticate(session, caps, settings);
    // An SMTPUTF8 message carries UTF-8 in its headers: 8-bit data, announced as such (RFC 6152).
    const eightBit = NON_ASCII.test(envelope.data) && caps.has("8BITMIME") ? " BODY=8BITMIME" : "";
    await session.command(`MAIL FROM:<${from}>${eightBit}${needsSmtpUtf8 ? " SMTPUTF8" : ""}`, [250], "MAIL FROM");
    await session.command(`RCPT TO:<${to}>`, [250, 251], "RCPT TO");
    await session.command("DATA", [354], "DATA");
    await session.send(envelope.data, "sending the message");
    await session.expect([250], "the message");
    // The message is accepted; a server that hangs up instead of answering QUIT changes nothing.
    await session
      .send("QUIT\r\n", "QUIT")
      .then(() => session.reply("QUIT", QUIT_WAIT_MS))
      .catch(() => {});
  } finally {
    session.close();
  }
}
