/**
 * Real SMTP peers on loopback for the tests, run in Node by vitest's globalSetup:
 * - `mailbox`: a well-behaved server (smtp-server) that requires AUTH, offers SMTPUTF8 and keeps every
 *   message; `plaintext`, another one for one test alone; `asciiOnly`, one without SMTPUTF8; `noAuth`, one
 *   that offers no AUTH and takes mail without it (Mailpit's default, an internal relay);
 * - `rejectSender` (550 to MAIL FROM), `rejectRecipient` (550 to RCPT TO, echoing the address) and
 *   `rejectLogin` (535 to AUTH), also smtp-server;
 * - scripted misbehaving peers: one that never speaks, ones that hang up after the greeting, after
 *   EHLO, or instead of answering QUIT, and a tripwire that only counts connections;
 * - `refused`: a port nobody listens on.
 * Tests read what happened (messages, connections, command lines) through a small HTTP inspection
 * endpoint on loopback.
 */
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import { SMTPConnection } from "smtp-server/lib/smtp-connection.js";
import { TURNSTILE_TEST_SECRET, type ReceivedMail, type SmtpFixture, type SmtpPeer } from "./types.ts";

const HOST = "127.0.0.1";

/**
 * smtp-server holds every greeting back 100 ms, to catch clients that talk before it (spam bots do), then looks
 * the client up in reverse DNS. The app's mail client always waits for the greeting, and that pause was most of
 * each of the suite's hundreds of conversations (113 ms at the median, 7 ms without it): the peers greet at once
 * instead, and `disableReverseLookup` skips the lookup of 127.0.0.1. Every reply after the greeting is unchanged.
 */
SMTPConnection.prototype.init = function (this: SMTPConnection) {
  this._setListeners(() => this.connectionReady());
};

function listen(server: NetServer | HttpServer | SMTPServer): Promise<number> {
  return new Promise((resolve, reject) => {
    const net = server instanceof SMTPServer ? (server as unknown as { server: NetServer }).server : server;
    net.once("error", reject);
    server.listen(0, HOST, () => resolve((net.address() as AddressInfo).port));
  });
}

export async function startSmtpPeers(): Promise<{ fixture: SmtpFixture; stop: () => Promise<void> }> {
  const received: ReceivedMail[] = [];
  const connections: Partial<Record<SmtpPeer, number>> = {};
  const count = (peer: SmtpPeer) => (connections[peer] = (connections[peer] ?? 0) + 1);
  // Every command line the smtp-server peers received, as sent (AUTH arguments redacted by smtp-server):
  // per peer, and per connection for the messages.
  const commands: Partial<Record<SmtpPeer, string[]>> = {};
  const commandsOfConnection = new Map<string, string[]>();
  const closers: Array<() => Promise<void>> = [];

  /** smtp-server logs each command line it receives at debug level; that log is the peer's transcript. */
  function transcript(peer: SmtpPeer): SMTPServerOptions["logger"] {
    return {
      debug(entry: { tnx?: string; cid?: string | number } | undefined, _label: unknown, line: unknown) {
        if (entry?.tnx !== "command" || entry.cid === undefined) return;
        (commands[peer] ??= []).push(String(line));
        const ofConnection = commandsOfConnection.get(String(entry.cid)) ?? [];
        commandsOfConnection.set(String(entry.cid), [...ofConnection, String(line)]);
      },
      // The other levels are smtp-server's own news, not the client's commands.
      info: () => {},
      warn: () => {},
      error: () => {},
    };
  }

  function smtp(name: SmtpPeer, overrides: Partial<SMTPServerOptions> = {}): SMTPServer {
    const credentials = new WeakMap<object, { username: string; password: string }>();
    const server = new SMTPServer({
      name: "test.smtp.local",
      banner: `${name} ready`,
      authMethods: ["PLAIN", "LOGIN"],
      allowInsecureAuth: true,
      disabledCommands: ["STARTTLS"],
      disableReverseLookup: true,
      logger: transcript(name),
      onConnect(_session, callback) {
        count(name);
        callback();
      },
      onAuth(auth, session, callback) {
        credentials.set(session, { username: auth.username ?? "", password: auth.password ?? "" });
        callback(null, { user: auth.username });
      },
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", () => {
          const auth = credentials.get(session);
          received.push({
            server: name,
            username: auth?.username ?? null,
            password: auth?.password ?? null,
            mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
            commands: commandsOfConnection.get(session.id) ?? [],
            raw: Buffer.concat(chunks).toString("utf8"),
          });
          callback();
        });
      },
      ...overrides,
    });
    server.on("error", () => {});
    closers.push(() => new Promise((resolve) => server.close(() => resolve())));
    return server;
  }

  /** A peer that follows a script instead of the protocol. */
  function scripted(name: SmtpPeer, onConnection: (socket: Socket) => void): NetServer {
    const sockets = new Set<Socket>();
    const server = createNetServer((socket) => {
      count(name);
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => {});
      onConnection(socket);
    });
    closers.push(
      () =>
        new Promise((resolve) => {
          for (const socket of sockets) socket.destroy();
          server.close(() => resolve());
        }),
    );
    return server;
  }

  /** Answers each command line with `answer(line)`; `null` hangs up without a reply. */
  function conversation(socket: Socket, answer: (line: string) => string | null): void {
    let buffered = "";
    let inData = false;
    socket.write("220 scripted ready\r\n");
    socket.on("data", (chunk) => {
      buffered += chunk.toString("utf8");
      let end: number;
      while ((end = buffered.indexOf("\r\n")) >= 0) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (inData) {
          if (line === ".") {
            inData = false;
            socket.write("250 accepted\r\n");
          }
          continue;
        }
        const reply = answer(line.toUpperCase());
        if (reply === null) {
          socket.destroy();
          return;
        }
        if (line.toUpperCase() === "DATA") inData = true;
        socket.write(reply);
      }
    });
  }

  const happyPath = (line: string): string | null => {
    if (line.startsWith("EHLO")) return "250-scripted\r\n250 AUTH PLAIN\r\n";
    if (line.startsWith("AUTH")) return "235 ok\r\n";
    if (line === "DATA") return "354 go ahead\r\n";
    if (line === "QUIT") return null;
    return "250 ok\r\n";
  };

  const servers = {
    mailbox: smtp("mailbox"),
    // Like mailbox (AUTH offered, no STARTTLS), for the test of the TLS rule alone: its transcript is that test's.
    plaintext: smtp("plaintext"),
    // A mailbox that does not offer SMTPUTF8 (smtp-server offers it unless told otherwise).
    asciiOnly: smtp("asciiOnly", { hideSMTPUTF8: true }),
    noAuth: smtp("noAuth", { authOptional: true, disabledCommands: ["STARTTLS", "AUTH"] }),
    rejectSender: smtp("rejectSender", {
      onMailFrom(_address, _session, callback) {
        const err = new Error("Sender address rejected") as Error & { responseCode: number };
        err.responseCode = 550;
        callback(err);
      },
    }),
    rejectRecipient: smtp("rejectRecipient", {
      onRcptTo(address, _session, callback) {
        // As real servers do, the reply echoes the address it refuses.
        const err = new Error(`<${address.address}>: Recipient address rejected`) as Error & { responseCode: number };
        err.responseCode = 550;
        callback(err);
      },
    }),
    rejectLogin: smtp("rejectLogin", {
      onAuth(_auth, _session, callback) {
        const err = new Error("Username and Password not accepted") as Error & { responseCode: number };
        err.responseCode = 535;
        callback(err);
      },
    }),
    silent: scripted("silent", () => {}),
    closeAfterGreeting: scripted("closeAfterGreeting", (socket) => socket.end("220 hello and goodbye\r\n")),
    closeAfterEhlo: scripted("closeAfterEhlo", (socket) =>
      conversation(socket, (line) => (line.startsWith("EHLO") ? null : "250 ok\r\n")),
    ),
    closeOnQuit: scripted("closeOnQuit", (socket) => conversation(socket, happyPath)),
    tripwire: scripted("tripwire", (socket) => socket.destroy()),
  };

  const ports = {} as Record<SmtpPeer, number>;
  for (const [name, server] of Object.entries(servers)) ports[name as SmtpPeer] = await listen(server);

  // A port that was free a moment ago and has nobody listening now.
  const probe = createNetServer();
  ports.refused = await listen(probe);
  await new Promise<void>((resolve) => probe.close(() => resolve()));

  const turnstileForms: Record<string, string>[] = [];
  const inspect = createHttpServer((req, res) => {
    const url = new URL(req.url ?? "/", `http://${HOST}`);
    res.setHeader("content-type", "application/json");
    if (url.pathname === "/messages") {
      const to = url.searchParams.get("to");
      res.end(JSON.stringify(received.filter((m) => to === null || m.rcptTo.includes(to))));
    } else if (url.pathname === "/connections") {
      res.end(JSON.stringify(connections));
    } else if (url.pathname === "/commands") {
      res.end(JSON.stringify(commands[url.searchParams.get("peer") as SmtpPeer] ?? []));
    } else if (url.pathname === "/turnstile/siteverify" && req.method === "POST") {
      // A Turnstile verifier for the tests: the token "pass" with the test's secret succeeds; every form is recorded.
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        const form = new URLSearchParams(body);
        turnstileForms.push(Object.fromEntries(form));
        const success = form.get("secret") === TURNSTILE_TEST_SECRET && form.get("response") === "pass";
        res.end(JSON.stringify(success ? { success } : { success, "error-codes": ["invalid-input-response"] }));
      });
    } else if (url.pathname === "/turnstile/forms") {
      res.end(JSON.stringify(turnstileForms));
    } else {
      res.statusCode = 404;
      res.end("{}");
    }
  });
  const inspectPort = await listen(inspect);
  closers.push(() => new Promise((resolve) => inspect.close(() => resolve())));

  return {
    fixture: { ports, inspectUrl: `http://${HOST}:${inspectPort}` },
    stop: async () => {
      await Promise.all(closers.map((close) => close()));
    },
  };
}
