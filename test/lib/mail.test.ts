import { env } from "cloudflare:workers";
import PostalMime from "postal-mime";
import { afterEach, describe, expect, it, vi } from "vitest";
import { readConfig, type SmtpConfig } from "../../src/config";
import { createLogger } from "../../src/lib/log";
import { sendEmail, type Mailer } from "../../src/lib/mail";
import { isLoopbackHost, withAsciiDomain } from "../../src/lib/smtp";
import { Contract } from "../contract";
import { register, storedCode, storedUser } from "../support/accounts";
import { call, callWithEnv, captureLogs, PASSWORD, randomEmail, TEXT, textOf } from "../support/app";
import { mailsTo, smtpCommands, smtpConnections, smtpPort } from "../support/mail";
import type { SmtpPeer } from "../smtp/types";

afterEach(() => {
  vi.restoreAllMocks();
});

async function registerThrough(peer: SmtpPeer, email: string) {
  return callWithEnv({ SMTP_PORT: smtpPort(peer) }, "POST", "/auth/register", { email, password: PASSWORD });
}

describe("verification e-mail when the mail server misbehaves", () => {
  it.each<[SmtpPeer, RegExp]>([
    ["refused", /could not connect/],
    ["silent", /timed out greeting/],
    ["closeAfterGreeting", /connection closed by the server EHLO/],
    ["closeAfterEhlo", /connection closed by the server EHLO/],
    ["rejectSender", /server refused MAIL FROM: 550/],
    ["rejectLogin", /server refused AUTH PLAIN: 535/],
  ])("still registers (201) and logs the failure when the server is %s", async (peer, reason) => {
    const logs = captureLogs();
    const email = randomEmail(peer.toLowerCase());
    const response = await registerThrough(peer, email);

    expect(await textOf(response)).toEqual({ status: 201, type: TEXT, body: Contract.userCreated });
    expect((await storedUser(email))?.isVerified).toBe(0);
    const failure = logs.find((line) => line.event === "verification_mail_failed");
    expect(failure).toMatchObject({ level: "error", errorName: "SmtpError" });
    expect(String(failure!.errorMessage)).toMatch(reason);
    // The log line never carries the code or the password.
    const code = (await storedCode(email))!.code;
    expect(JSON.stringify(logs)).not.toContain(code);
    expect(JSON.stringify(logs)).not.toContain(PASSWORD);
  });

  it("masks the recipient's address that a refusal echoes in the logged SMTP reply", async () => {
    const logs = captureLogs();
    const email = `jane.doe-${crypto.randomUUID()}@example.com`;
    expect((await registerThrough("rejectRecipient", email)).status).toBe(201);
    const failure = logs.find((line) => line.event === "verification_mail_failed");
    expect(failure!.errorMessage).toBe("server refused RCPT TO: 550 <j***@example.com>: Recipient address rejected");
    expect(JSON.stringify(logs)).not.toContain(email.split("@")[0]);
  });

  it("keeps serving other requests after a server hung up mid-conversation", async () => {
    await registerThrough("closeAfterGreeting", randomEmail());
    await registerThrough("closeAfterEhlo", randomEmail());
    const response = await call("GET", "/notes");
    expect(response.status).toBe(200);
  });

  it("counts the mail as sent when the server hangs up instead of answering QUIT", async () => {
    const logs = captureLogs();
    const response = await registerThrough("closeOnQuit", randomEmail());
    expect(response.status).toBe(201);
    expect(logs.map((line) => line.event)).toContain("verification_mail_sent");
    expect(logs.map((line) => line.event)).not.toContain("verification_mail_failed");
  });

  it.each([
    ["MAIL_EMAIL", { MAIL_EMAIL: undefined }],
    ["MAIL_APP_PASSWORD", { MAIL_APP_PASSWORD: "" }],
  ])("opens no SMTP connection without %s, logs it and still answers 201", async (_name, missing) => {
    const logs = captureLogs();
    const before = (await smtpConnections()).tripwire ?? 0;
    const email = randomEmail();
    const response = await callWithEnv({ ...missing, SMTP_PORT: smtpPort("tripwire") }, "POST", "/auth/register", {
      email,
      password: PASSWORD,
    });
    expect(await textOf(response)).toEqual({ status: 201, type: TEXT, body: Contract.userCreated });
    expect((await smtpConnections()).tripwire ?? 0).toBe(before);
    expect(await mailsTo(email)).toEqual([]);
    expect(logs.find((line) => line.event === "mail_not_configured")).toMatchObject({ level: "warn" });
  });
});

describe("credentials and TLS", () => {
  // 0.0.0.0 is not a loopback address, yet on Linux a connection to it reaches a server listening on
  // 127.0.0.1: the conversation is real, only the host's name is remote.
  it("sends no AUTH in clear to a host that is not loopback, logs why and still answers 201", async () => {
    const logs = captureLogs();
    const email = randomEmail();
    const response = await callWithEnv(
      { SMTP_HOST: "0.0.0.0", SMTP_PORT: smtpPort("plaintext") },
      "POST",
      "/auth/register",
      {
        email,
        password: PASSWORD,
      },
    );

    expect(await textOf(response)).toEqual({ status: 201, type: TEXT, body: Contract.userCreated });
    expect(await smtpCommands("plaintext")).toEqual(["EHLO notes.test"]);
    expect(await mailsTo(email)).toEqual([]);
    expect(logs.find((line) => line.event === "verification_mail_failed")).toMatchObject({
      level: "error",
      errorName: "SmtpError",
      errorMessage:
        "refusing to send credentials without TLS: the server does not offer STARTTLS and 0.0.0.0 is not a loopback host",
    });
  });
});

describe("SMTP_AUTH: a server that takes mail without AUTH", () => {
  const register = (overrides: Record<string, string | undefined>, email: string) =>
    callWithEnv({ SMTP_PORT: smtpPort("noAuth"), ...overrides }, "POST", "/auth/register", {
      email,
      password: PASSWORD,
    });

  it("with SMTP_AUTH=none, mails without AUTH and without MAIL_APP_PASSWORD, from MAIL_EMAIL", async () => {
    const logs = captureLogs();
    const email = randomEmail("noauth");
    expect(await textOf(await register({ SMTP_AUTH: "none", MAIL_APP_PASSWORD: "" }, email))).toEqual({
      status: 201,
      type: TEXT,
      body: Contract.userCreated,
    });
    const [received] = await mailsTo(email);
    expect(received).toMatchObject({
      server: "noAuth",
      username: null,
      mailFrom: "sender@notes.test",
      rcptTo: [email],
    });
    expect(received!.commands.some((line) => line.toUpperCase().startsWith("AUTH"))).toBe(false);
    expect((await PostalMime.parse(received!.raw)).text).toContain((await storedCode(email))!.code);
    expect(logs.map((line) => line.event)).toContain("verification_mail_sent");
  });

  it("by default (SMTP_AUTH=login) sends nothing to a server without AUTH, and the log says which setting would", async () => {
    const logs = captureLogs();
    const email = randomEmail("noauth");
    expect((await register({}, email)).status).toBe(201);
    expect(await mailsTo(email)).toEqual([]);
    expect(logs.find((line) => line.event === "verification_mail_failed")).toMatchObject({
      errorName: "SmtpError",
      errorMessage:
        "the server offers neither AUTH PLAIN nor AUTH LOGIN (SMTP_AUTH=none sends to a server that takes mail without AUTH)",
    });
  });

  it("never takes an empty MAIL_APP_PASSWORD for SMTP_AUTH=none: by default no connection is opened, as the contract says", async () => {
    const logs = captureLogs();
    const before = (await smtpConnections()).noAuth ?? 0;
    const email = randomEmail("noauth");
    expect((await register({ MAIL_APP_PASSWORD: "" }, email)).status).toBe(201);
    expect((await smtpConnections()).noAuth ?? 0).toBe(before);
    expect(logs.find((line) => line.event === "mail_not_configured")).toMatchObject({ level: "warn" });
  });

  it("still needs MAIL_EMAIL with SMTP_AUTH=none: it is the From address", async () => {
    const logs = captureLogs();
    const before = (await smtpConnections()).noAuth ?? 0;
    expect((await register({ SMTP_AUTH: "none", MAIL_EMAIL: undefined }, randomEmail("noauth"))).status).toBe(201);
    expect((await smtpConnections()).noAuth ?? 0).toBe(before);
    expect(logs.find((line) => line.event === "mail_not_configured")).toMatchObject({ level: "warn" });
  });

  it("sends without AUTH in plain text to a host that is not loopback: there is no password to give away", async () => {
    const email = randomEmail("noauth");
    expect((await register({ SMTP_AUTH: "none", SMTP_HOST: "0.0.0.0" }, email)).status).toBe(201);
    expect(await mailsTo(email)).toMatchObject([{ server: "noAuth", username: null }]);
  });

  it("answers 500 and names an SMTP_AUTH that is neither login nor none", async () => {
    const logs = captureLogs();
    const response = await callWithEnv({ SMTP_AUTH: "plain" }, "GET", "/notes");
    expect(response.status).toBe(500);
    expect(JSON.stringify(logs)).toContain("SMTP_AUTH must be one of: login, none");
  });
});

describe("internationalized addresses", () => {
  const unique = () => crypto.randomUUID().slice(0, 8);

  it("sends to a non-ASCII local part with SMTPUTF8, and the domain as punycode in envelope and header", async () => {
    const id = unique();
    const email = `ünïcode-${id}@bücher.example`;
    expect((await register(email)).status).toBe(201);

    // smtp-server hands the domain back decoded; the command lines show what was sent.
    const [mail] = await mailsTo(email);
    expect(mail!.commands.filter((line) => /^(MAIL|RCPT) /.test(line))).toEqual([
      "MAIL FROM:<sender@notes.test> BODY=8BITMIME SMTPUTF8",
      `RCPT TO:<ünïcode-${id}@xn--bcher-kva.example>`,
    ]);
    expect(mail!.raw).toContain(`\r\nTo: ünïcode-${id}@xn--bcher-kva.example\r\n`);
    expect((await PostalMime.parse(mail!.raw)).to).toEqual([
      { name: "", address: `ünïcode-${id}@xn--bcher-kva.example` },
    ]);
  });

  it("sends to an ASCII local part at an internationalized domain without SMTPUTF8, all in ASCII", async () => {
    const id = unique();
    const email = `user-${id}@bücher.example`;
    expect((await registerThrough("asciiOnly", email)).status).toBe(201);

    const [mail] = await mailsTo(email);
    expect(mail!.commands.filter((line) => /^(MAIL|RCPT) /.test(line))).toEqual([
      "MAIL FROM:<sender@notes.test>",
      `RCPT TO:<user-${id}@xn--bcher-kva.example>`,
    ]);
    expect(mail!.raw).toContain(`\r\nTo: user-${id}@xn--bcher-kva.example\r\n`);
    expect(mail!.raw).toMatch(/^\p{ASCII}*$/u);
  });

  it("sends nothing to a non-ASCII local part when the server lacks SMTPUTF8, and logs why", async () => {
    const logs = captureLogs();
    const email = `ünïcode-${unique()}@bücher.example`;
    expect(await textOf(await registerThrough("asciiOnly", email))).toEqual({
      status: 201,
      type: TEXT,
      body: Contract.userCreated,
    });
    expect(await mailsTo(email)).toEqual([]);
    expect(logs.find((line) => line.event === "verification_mail_failed")).toMatchObject({
      errorName: "SmtpError",
      errorMessage: "an address has a non-ASCII local part, which needs SMTPUTF8, and the server does not offer it",
    });
  });

  it("opens no connection for a domain that is not a host name, and logs why", async () => {
    const logs = captureLogs();
    const before = (await smtpConnections()).tripwire ?? 0;
    const email = `user-${unique()}@bü/cher.example`;
    expect((await registerThrough("tripwire", email)).status).toBe(201);
    expect((await smtpConnections()).tripwire ?? 0).toBe(before);
    expect(logs.find((line) => line.event === "verification_mail_failed")).toMatchObject({
      errorName: "SmtpError",
      errorMessage: "the domain bü/cher.example is not a valid internationalized domain name",
    });
  });
});

describe("sendEmail, the one sender of every kind of mail", () => {
  const smtp = readConfig(env).smtp!;
  const mail = (to: string) => ({ to, subject: "Reset your password", text: "Your reset code is: 654321" });
  /** A mailer of `account` whose budget always has room. */
  const mailer = (account: SmtpConfig = smtp): Mailer => ({
    smtp: account,
    log: createLogger(),
    claim: () => Promise.resolve(true),
  });

  it("delivers a mail of any kind and logs <kind>_mail_sent", async () => {
    const logs = captureLogs();
    const to = randomEmail("reset");
    await sendEmail(mailer(), mail(to), "password_reset");

    const [received] = await mailsTo(to);
    const parsed = await PostalMime.parse(received!.raw);
    expect(parsed.subject).toBe("Reset your password");
    expect(parsed.text?.trim()).toBe("Your reset code is: 654321");
    expect(parsed.from).toMatchObject({ name: "Notes API Test", address: "sender@notes.test" });
    expect(parsed.to).toEqual([{ name: "", address: to }]);
    expect(logs.map((line) => [line.level, line.event])).toEqual([["info", "password_reset_mail_sent"]]);
  });

  it("resolves and logs <kind>_mail_failed when the delivery fails", async () => {
    const logs = captureLogs();
    await expect(
      sendEmail(mailer({ ...smtp, port: Number(smtpPort("refused")) }), mail(randomEmail()), "password_changed"),
    ).resolves.toBeUndefined();
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ level: "error", event: "password_changed_mail_failed", errorName: "SmtpError" });
  });

  it("opens no connection for an address that would break out of the SMTP command", async () => {
    const logs = captureLogs();
    const before = (await smtpConnections()).tripwire ?? 0;
    const injected = `${randomEmail()}>\r\nRCPT TO:<${randomEmail()}`;
    await sendEmail(mailer({ ...smtp, port: Number(smtpPort("tripwire")) }), mail(injected), "password_reset");
    expect((await smtpConnections()).tripwire ?? 0).toBe(before);
    expect(logs).toEqual([
      expect.objectContaining({
        event: "password_reset_mail_failed",
        errorMessage: "an envelope address holds white space, a control character or an angle bracket",
      }),
    ]);
  });

  it("sends nothing, and opens no connection, when the mailer's budget refuses the mail", async () => {
    const before = (await smtpConnections()).tripwire ?? 0;
    const kinds: string[] = [];
    const refusing: Mailer = {
      ...mailer({ ...smtp, port: Number(smtpPort("tripwire")) }),
      claim: (kind) => (kinds.push(kind), Promise.resolve(false)),
    };
    await sendEmail(refusing, mail(randomEmail()), "verification");
    expect(kinds).toEqual(["verification"]);
    expect((await smtpConnections()).tripwire ?? 0).toBe(before);
  });

  it("resolves and logs mail_not_configured without a mail account", async () => {
    const logs = captureLogs();
    await sendEmail({ ...mailer(), smtp: undefined }, mail(randomEmail()), "email_change");
    expect(logs).toEqual([
      expect.objectContaining({
        level: "warn",
        event: "mail_not_configured",
        detail: "MAIL_EMAIL or MAIL_APP_PASSWORD is not set; no email_change e-mail sent",
      }),
    ]);
  });
});

describe("isLoopbackHost, the hosts that may receive SMTP credentials without TLS", () => {
  it.each(["localhost", "LocalHost", "127.0.0.1", "127.255.0.9", "::1", "[::1]"])("accepts %s", (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });

  it.each([
    "0.0.0.0",
    "127.0.0.256",
    "127.1",
    "128.0.0.1",
    "10.0.0.1",
    "::ffff:127.0.0.1",
    "localhost.example.com",
    "smtp.gmail.com",
    "",
  ])("refuses %s", (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });
});

describe("withAsciiDomain", () => {
  it.each([
    ["ünïcode@bücher.example", "ünïcode@xn--bcher-kva.example"],
    ["Ada@BÜCHER.Example", "Ada@xn--bcher-kva.example"],
    ["user@例え.テスト", "user@xn--r8jz45g.xn--zckzah"],
    ["user@Example.COM", "user@Example.COM"],
  ])("writes %s as %s", (address, expected) => {
    expect(withAsciiDomain(address)).toBe(expected);
  });

  it.each(["user@bü/cher.example", "user@bü:25", "user@１２７.０.０.１", "user@bü%41.example"])(
    "refuses %s",
    (address) => {
      expect(() => withAsciiDomain(address)).toThrow(/is not a valid internationalized domain name$/);
    },
  );
});
