import { connect } from "cloudflare:sockets";
import { SmtpConversation, SmtpError, type Reply } from "./smtp-conversation";

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
  /**
   * "login": AUTH PLAIN or LOGIN with the user name and password; "none": no AUTH (a server that takes mail without
   * it).
   */
  auth: "login" | "none";
  /** Budget for the whole conversation, connect to QUIT. */
  timeoutMs: number;
}

export interface Envelope {
  from: string;
  to: string;
  /** The message, dot-stuffed and terminated by CRLF.CRLF. */
  data: string;
}

// After the message is accepted, QUIT is a courtesy: do not wait long for its answer.
const QUIT_WAIT_MS = 1_000;

function base64(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
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
    throw new SmtpError(
      "the server offers neither AUTH PLAIN nor AUTH LOGIN (SMTP_AUTH=none sends to a server that takes mail without AUTH)",
    );
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

/**
 * Greets the server and secures the connection: EHLO, STARTTLS when the socket is not TLS already and the
 * server offers it. Answers the server's extensions, and refuses to go on in plain text off this machine.
 */
async function greet(
  session: SmtpConversation,
  settings: SmtpSettings,
  heloName: string,
): Promise<Map<string, string[]>> {
  await session.expect([220], "greeting");
  let caps = capabilities(await session.command(`EHLO ${heloName}`, [250], "EHLO"));
  let encrypted = settings.secure;
  if (!encrypted && caps.has("STARTTLS")) {
    await session.command("STARTTLS", [220], "STARTTLS");
    session.upgradeToTls(settings.host);
    encrypted = true;
    caps = capabilities(await session.command(`EHLO ${heloName}`, [250], "EHLO after STARTTLS"));
  }
  // Anyone on the path would read the password: only a connection that stays on the machine may go plain.
  // Without AUTH there is no password to give away (the message itself crosses as mail between servers does).
  if (!encrypted && settings.auth === "login" && !isLoopbackHost(settings.host)) {
    throw new SmtpError(
      `refusing to send credentials without TLS: the server does not offer STARTTLS and ${settings.host} is not a loopback host`,
    );
  }
  return caps;
}

/** The transaction of one message: envelope, data, and (a courtesy) QUIT. */
async function transfer(
  session: SmtpConversation,
  caps: Map<string, string[]>,
  from: string,
  to: string,
  data: string,
  smtpUtf8: boolean,
): Promise<void> {
  // An SMTPUTF8 message carries UTF-8 in its headers: 8-bit data, announced as such (RFC 6152).
  const eightBit = NON_ASCII.test(data) && caps.has("8BITMIME") ? " BODY=8BITMIME" : "";
  await session.command(`MAIL FROM:<${from}>${eightBit}${smtpUtf8 ? " SMTPUTF8" : ""}`, [250], "MAIL FROM");
  await session.command(`RCPT TO:<${to}>`, [250, 251], "RCPT TO");
  await session.command("DATA", [354], "DATA");
  await session.send(data, "sending the message");
  await session.expect([250], "the message");
  // The message is accepted; a server that hangs up instead of answering QUIT changes nothing.
  await session
    .send("QUIT\r\n", "QUIT")
    .then(() => session.reply("QUIT", QUIT_WAIT_MS))
    .catch(() => {});
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
  const socket = connect(
    { hostname: settings.host, port: settings.port },
    { secureTransport: settings.secure ? "on" : "starttls", allowHalfOpen: false },
  );
  const session = new SmtpConversation(socket, Date.now() + settings.timeoutMs);
  try {
    await session.within(socket.opened, "connecting").catch((err: unknown) => {
      throw err instanceof SmtpError ? err : new SmtpError(`could not connect to ${settings.host}:${settings.port}`);
    });
    const caps = await greet(session, settings, from.split("@").pop() || "localhost");
    if (needsSmtpUtf8 && !caps.has("SMTPUTF8")) {
      throw new SmtpError(
        "an address has a non-ASCII local part, which needs SMTPUTF8, and the server does not offer it",
      );
    }
    if (settings.auth === "login") await authenticate(session, caps, settings);
    await transfer(session, caps, from, to, envelope.data, needsSmtpUtf8);
  } finally {
    session.close();
  }
}
