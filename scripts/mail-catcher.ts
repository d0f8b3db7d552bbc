/**
 * A local SMTP server for development: accepts every message and prints it to the terminal, so the
 * verification code can be read without a real mail account. Used by scripts/dev.ts; can also run
 * on its own: `node scripts/mail-catcher.ts [port] [host]`.
 */
import PostalMime from "postal-mime";
import { SMTPServer } from "smtp-server";
import { firstLine, portInUse } from "./ports.ts";

/**
 * What our catcher says in its greeting (`220 mail-catcher.local ESMTP <this>`): how `npm run dev` tells
 * it apart from a developer's own mail server on the same port.
 */
export const CATCHER_BANNER = "verify-notes-api dev mail catcher";
/** A mail server greets as soon as it accepts a connection; one that says nothing for this long is not one. */
const GREETING_TIMEOUT_MS = 3_000;

export interface MailCatcher {
  close(): Promise<void>;
}

type Address = { name: string; address?: string; group?: Address[] };

function formatAddresses(list: Address[] | Address | undefined): string {
  const all = (Array.isArray(list) ? list : list ? [list] : []).flatMap((a) => (a.group ? a.group : [a]));
  return all.map((a) => (a.name ? `${a.name} <${a.address ?? ""}>` : (a.address ?? ""))).join(", ") || "(none)";
}

/** Frames `lines` so they stand out among wrangler's own output. */
function framed(lines: string[]): string {
  const width = Math.max(...lines.map((l) => l.length));
  const bar = "─".repeat(width + 2);
  return [`┌${bar}┐`, ...lines.map((l) => `│ ${l.padEnd(width)} │`), `└${bar}┘`].join("\n");
}

async function printMessage(raw: Buffer, envelopeTo: string[]): Promise<void> {
  // The message is MIME (multipart, quoted-printable) as built by worker-mailer: decode it.
  const mail = await PostalMime.parse(raw);
  const text = (mail.text ?? "(no text part)").trim();
  const code = /\b\d{6}\b/.exec(text)?.[0];
  const lines = [
    `From:    ${formatAddresses(mail.from)}`,
    `To:      ${formatAddresses(mail.to)}${mail.to ? "" : ` (envelope: ${envelopeTo.join(", ")})`}`,
    `Subject: ${mail.subject ?? "(none)"}`,
    "",
    ...text.split(/\r?\n/),
  ];
  if (code) lines.push("", `>>> CODE: ${code} <<<`);
  console.log(`\n[mail-catcher] message received\n${framed(lines)}\n`);
}

/**
 * Listens on host:port. Resolves to null (after a one-line warning) when the port cannot be bound,
 * because a missing catcher must not stop the worker from starting.
 */
export async function startMailCatcher(host: string, port: number): Promise<MailCatcher | null> {
  const server = new SMTPServer({
    name: "mail-catcher.local",
    banner: CATCHER_BANNER,
    // Plain text only: the worker upgrades with STARTTLS when offered, and we have no certificate to offer.
    disabledCommands: ["STARTTLS"],
    hideSTARTTLS: true,
    // The worker requires AUTH to be advertised; accept any credentials over the plain connection.
    authMethods: ["PLAIN", "LOGIN"],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username ?? "dev" });
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const to = session.envelope.rcptTo.map((r) => r.address);
        printMessage(Buffer.concat(chunks), to)
          .catch((err: unknown) => console.error(`[mail-catcher] could not parse a message: ${String(err)}`))
          .finally(() => callback());
      });
    },
  });

  const listening = await new Promise<boolean>((resolve) => {
    const onListenError = (err: NodeJS.ErrnoException) => {
      console.warn(
        err.code === "EADDRINUSE"
          ? `[mail-catcher] WARNING: port ${port} on ${host} is taken, mail will not be caught; change SMTP_PORT in .dev.vars.`
          : `[mail-catcher] WARNING: cannot listen on ${host}:${port} (${err.message}), mail will not be caught.`,
      );
      resolve(false);
    };
    server.once("error", onListenError);
    try {
      server.listen(port, host, () => {
        server.off("error", onListenError);
        resolve(true);
      });
    } catch (err) {
      // A bad port (e.g. SMTP_PORT=abc) throws here instead of emitting "error".
      onListenError(err as NodeJS.ErrnoException);
    }
  });
  if (!listening) return null;
  // Later errors (a client that misbehaves) must not crash the dev script.
  server.on("error", (err) => console.error(`[mail-catcher] ${err.message}`));
  console.log(`[mail-catcher] listening on ${host}:${port}; messages will be printed here.`);
  return { close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/**
 * What `npm run dev` does about mail on host:port (SMTP_HOST and SMTP_PORT of .dev.vars, a loopback
 * address): start our catcher there when the port is free; when it is taken, read the greeting of what
 * answers there. Our own catcher means another `npm run dev` is running, whose catcher would get this
 * worker's mail: refuse, saying so. Any other mail server (Mailpit, MailHog, smtp4dev…) is the developer's
 * own: use it and start none. Anything that does not greet as a mail server: refuse.
 */
export async function planMailCatcher(
  host: string,
  port: number,
  greetingTimeoutMs = GREETING_TIMEOUT_MS,
): Promise<{ start: true } | { useRunning: string } | { refuse: string[] }> {
  if (!(await portInUse(host, port))) return { start: true };
  const greeting = await firstLine(host, port, greetingTimeoutMs);
  if (greeting?.includes(CATCHER_BANNER)) {
    return {
      refuse: [
        `the mail catcher's port ${port} (SMTP_PORT in .dev.vars) is in use by the catcher of another \`npm run dev\`,`,
        "which would receive this worker's mail. Stop it, or set another SMTP_PORT in .dev.vars.",
      ],
    };
  }
  if (greeting === undefined || !/^220[ -]/.test(greeting)) {
    return {
      refuse: [
        `port ${port} on ${host} (SMTP_PORT in .dev.vars) is in use by something that does not greet as a mail server${greeting === undefined ? "" : ` ("${greeting.slice(0, 80)}")`}.`,
        "Stop it, or set another SMTP_PORT in .dev.vars.",
      ],
    };
  }
  return { useRunning: greeting };
}

if (import.meta.main) {
  const port = Number(process.argv[2] ?? 2525);
  const host = process.argv[3] ?? "127.0.0.1";
  const catcher = await startMailCatcher(host, port);
  if (!catcher) process.exit(1);
}
