import { env } from "cloudflare:workers";
import PostalMime from "postal-mime";
import { afterEach, describe, expect, it, vi } from "vitest";
import { maskEmail } from "../src/lib/log";
import {
  bearer,
  call,
  callWithEnv,
  captureLogs,
  fireCron,
  JSON_TYPE,
  jsonOf,
  login,
  logIn,
  mailedCode,
  mailsTo,
  me,
  otherCode,
  PASSWORD,
  randomEmail,
  refresh,
  register,
  setCode,
  setUser,
  storedCode,
  storedUser,
  tally,
  TEXT,
  textOf,
  type Tokens,
} from "./helpers";

/**
 * Account recovery (forgot and reset password) and management (change password, change e-mail, delete
 * the account), through the deployed app's fetch handler, with the codes read from the mails the
 * loopback SMTP server received.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const NEW_PASSWORD = "a brand new passphrase";

const RESET_REQUESTED = "If this email belongs to an account, a password reset code has been sent.";
const PASSWORD_RESET = "Password has been reset. You can now log in.";
const INVALID_RESET_CODE = "Invalid or expired reset code.";
const INVALID_CONFIRMATION_CODE = "Invalid or expired confirmation code.";
const WRONG_PASSWORD = "Invalid password.";
const INVALID_ACCESS = "Invalid or expired access token.";
const INVALID_REFRESH = "Invalid or expired refresh token.";
const INVALID_CREDENTIALS = "Invalid email or password.";
const USER_EXISTS = "User with this email already exists.";
const LOGIN_LOCKED = "Too many failed login attempts. Please try again later.";
const PASSWORD_CHANGED_TEXT =
  "Your password was changed and your other sessions were signed out. If this was not you, reset your password now.";

const Subject = {
  reset: "Reset Your Password",
  passwordChanged: "Your Password Was Changed",
  confirmNewEmail: "Confirm Your New Email Address",
  emailChanged: "Your Email Address Was Changed",
} as const;

interface ParsedMail {
  from: string | undefined;
  subject: string;
  text: string;
}

/** The request_id of the last forgot-password answer for each address (as the app normalizes it). */
const lastRequestIds = new Map<string, string>();

function lastRequestId(email: string): string {
  return lastRequestIds.get(email.trim().toLowerCase()) ?? "no-such-request";
}

/** Keeps the answer's request_id for reset() (read from a copy: the caller reads the answer itself). */
async function keepRequestId(email: string, response: Response): Promise<Response> {
  const body: unknown = await response.clone().json();
  if (typeof body === "object" && body !== null && "request_id" in body && typeof body.request_id === "string") {
    lastRequestIds.set(email.trim().toLowerCase(), body.request_id);
  }
  return response;
}

/** The answer of forgot-password, the same for every address. */
const ACCEPTED = { status: 200, type: JSON_TYPE, body: { message: RESET_REQUESTED, request_id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/) } };

async function forgot(email: string): Promise<Response> {
  return keepRequestId(email, await call("POST", "/auth/forgot-password", { email }));
}

/**
 * forgot-password through callWithEnv, which waits for the work the request left to waitUntil: after
 * it, a mail that was not sent never will be ("no mail", not "no mail yet").
 */
async function forgotAndSettle(email: string): Promise<Response> {
  return keepRequestId(email, await callWithEnv({}, "POST", "/auth/forgot-password", { email }));
}

/** A reset with the code of the address's last forgot-password request, unless another request is named. */
function reset(email: string, token: string, password = NEW_PASSWORD, requestId = lastRequestId(email)): Promise<Response> {
  return call("POST", "/auth/reset-password", { email, token, password, request_id: requestId });
}

/** The account's newest reset request as D1 holds it (null once none is left), read with plain SQL. */
async function storedReset(email: string) {
  return env.DB.prepare(
    "SELECT code, expires_at, attempts FROM reset_requests WHERE user_id = (SELECT id FROM users WHERE email = ?) ORDER BY expires_at DESC LIMIT 1",
  )
    .bind(email)
    .first<{ code: string; expires_at: number; attempts: number }>();
}

function changePassword(token: string, currentPassword: string, newPassword = NEW_PASSWORD): Promise<Response> {
  return call("POST", "/auth/change-password", { current_password: currentPassword, new_password: newPassword }, bearer(token));
}

function changeEmail(token: string, newEmail: string, password = PASSWORD): Promise<Response> {
  return call("POST", "/auth/change-email", { password, new_email: newEmail }, bearer(token));
}

function confirmEmailChange(token: string, code: string): Promise<Response> {
  return call("POST", "/auth/confirm-email-change", { token: code }, bearer(token));
}

function deleteAccount(token: string, password = PASSWORD): Promise<Response> {
  return call("DELETE", "/auth/account", { password }, bearer(token));
}

/**
 * Registration with the mail account unset: the same account, allowance claimed included, without the
 * SMTP conversation (about 0.1 s a mail), for tests that read none of its mails.
 */
function quietRegister(email: string, password = PASSWORD): Promise<Response> {
  return callWithEnv({ MAIL_EMAIL: " " }, "POST", "/auth/register", { email, password });
}

/** A verified account made without a mail (see quietRegister): the code is read from D1. */
async function account(password = PASSWORD): Promise<string> {
  const email = randomEmail();
  expect((await quietRegister(email, password)).status).toBe(201);
  expect((await call("POST", "/auth/verify-email", { email, token: (await storedCode(email))!.code })).status).toBe(200);
  return email;
}

/** The account's last mail moved back past the 60-second cooldown (the hourly cap still counts), reset mails' too. */
async function pastCooldown(email: string): Promise<void> {
  await setUser(email, { lastMailAt: Date.now() - MINUTE });
  await env.DB.prepare("UPDATE reset_mail_allowances SET last_mail_at = ? WHERE email = ?").bind(Date.now() - MINUTE, email).run();
}

/** Every mail sent to `address` with `subject`, oldest first, parsed. */
async function mailsWithSubject(address: string, subject: string): Promise<ParsedMail[]> {
  const parsed: ParsedMail[] = [];
  for (const mail of await mailsTo(address)) {
    const message = await PostalMime.parse(mail.raw);
    if (message.subject !== subject) continue;
    const from = message.from ? `${message.from.name} <${message.from.address}>` : undefined;
    parsed.push({ from, subject: message.subject, text: (message.text ?? "").trim() });
  }
  return parsed;
}

/** Waits (up to 2 s) until `address` has `count` mails with `subject`: forgot-password mails after answering. */
async function awaitMails(address: string, subject: string, count = 1): Promise<ParsedMail[]> {
  const deadline = Date.now() + 2_000;
  for (;;) {
    const mails = await mailsWithSubject(address, subject);
    if (mails.length >= count || Date.now() > deadline) return mails;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The 6-digit code of a mail whose text is `<prefix><code>`. */
function codeIn(mail: ParsedMail | undefined, prefix: string): string {
  const match = new RegExp(`^${prefix}(\\d{6})$`).exec(mail?.text ?? "");
  if (!match) throw new Error(`no code in mail: ${mail?.text}`);
  return match[1]!;
}

/** Asks for a reset code (past the cooldown) and returns the code from the newest reset mail. */
async function resetCode(email: string): Promise<string> {
  const before = (await mailsWithSubject(email, Subject.reset)).length;
  await pastCooldown(email);
  expect(await jsonOf(await forgot(email))).toEqual(ACCEPTED);
  const mails = await awaitMails(email, Subject.reset, before + 1);
  expect(mails).toHaveLength(before + 1);
  return codeIn(mails.at(-1), "Your password reset code is: ");
}

/** Asks for an e-mail change (past the cooldown) and returns the code mailed to the new address. */
async function emailChangeCode(email: string, token: string, newEmail: string): Promise<string> {
  await pastCooldown(email);
  expect(await textOf(await changeEmail(token, newEmail))).toEqual({
    status: 200,
    type: TEXT,
    body: "A confirmation code has been sent to the new address.",
  });
  const mails = await mailsWithSubject(newEmail, Subject.confirmNewEmail);
  expect(mails).toHaveLength(1);
  return codeIn(mails[0], "Your email change confirmation code is: ");
}

async function count(sql: string, ...params: unknown[]): Promise<number> {
  return (await env.DB.prepare(sql).bind(...params).first<number>("n"))!;
}

async function loginFailuresRow(email: string) {
  return env.DB.prepare("SELECT failures, lockedUntil FROM login_failures WHERE email = ?").bind(email).first<{ failures: number; lockedUntil: number }>();
}

/** Ten wrong logins: the address is locked, even for the right password. */
async function lockLogin(email: string): Promise<void> {
  for (let i = 0; i < 10; i++) expect((await login(email, "wrong password")).status).toBe(401);
  expect(await textOf(await login(email))).toEqual({ status: 429, type: TEXT, body: LOGIN_LOCKED });
}

/** Expects the 401 of a dead access token on /auth/me and of a dead refresh token on /auth/refresh. */
async function expectEnded(tokens: Tokens): Promise<void> {
  expect(await textOf(await me(tokens.token))).toEqual({ status: 401, type: TEXT, body: INVALID_ACCESS });
  expect(await textOf(await refresh(tokens.refresh_token))).toEqual({ status: 401, type: TEXT, body: INVALID_REFRESH });
}

/**
 * Sends a request whose database is env.DB, except that its first batch with a statement matching
 * `pattern` waits: the request is stopped between its checks and its writes while the test sends
 * others, so that an interleaving an attacker can provoke is pinned deterministically. `release` lets
 * the batch go and answers the held request's response.
 */
async function holdRequest(pattern: RegExp, send: (db: D1Database) => Promise<Response>): Promise<{ release: () => Promise<Response> }> {
  let release!: () => void;
  let reached!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const held = new Promise<void>((resolve) => (reached = resolve));
  const sqlOf = new WeakMap<D1PreparedStatement, string>();
  let armed = true;
  const db = {
    prepare(query: string) {
      const statement = env.DB.prepare(query);
      return {
        bind(...values: unknown[]) {
          const bound = statement.bind(...values);
          sqlOf.set(bound, query);
          return bound;
        },
        all: () => statement.all(),
        raw: () => statement.raw(),
        run: () => statement.run(),
        first: () => statement.first(),
      };
    },
    async batch(statements: D1PreparedStatement[]) {
      if (armed && statements.some((statement) => pattern.test(sqlOf.get(statement) ?? ""))) {
        armed = false;
        reached();
        await gate;
      }
      return env.DB.batch(statements);
    },
    // The app reads and writes through a D1 session of the binding (read replication): this one.
    withSession() {
      return { prepare: (query: string) => db.prepare(query), batch: (statements: D1PreparedStatement[]) => db.batch(statements), getBookmark: () => null };
    },
  };
  const response = send(db as unknown as D1Database);
  await Promise.race([
    held,
    response.then(() => {
      throw new Error(`the request answered without a batch matching ${pattern}`);
    }),
  ]);
  return {
    release: () => {
      release();
      return response;
    },
  };
}

/** A login stopped just before it creates its session: the password is checked, the session not yet written. */
function heldLogin(email: string, password = PASSWORD) {
  return holdRequest(/^insert into "sessions"/i, (db) => callWithEnv({ DB: db }, "POST", "/auth/login", { email, password }));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("holdRequest (the helper the race tests rely on)", () => {
  it("changes nothing but the timing: a login held and released with nothing in between logs in", async () => {
    const email = await account();
    const held = await heldLogin(email);
    const response = await held.release();
    expect(response.status).toBe(200);
    expect((await me(((await response.json()) as Tokens).token)).status).toBe(200);
  });
});

describe("POST /auth/forgot-password", () => {
  it("mails a verified account a reset code from the configured sender, and stores it for 15 minutes", async () => {
    const email = await account();
    await pastCooldown(email);
    const before = Date.now();
    expect(await jsonOf(await forgot(email))).toEqual(ACCEPTED);

    const mails = await awaitMails(email, Subject.reset);
    expect(mails).toEqual([
      { from: "Notes API Test <sender@notes.test>", subject: Subject.reset, text: expect.stringMatching(/^Your password reset code is: \d{6}$/) },
    ]);
    const code = codeIn(mails[0], "Your password reset code is: ");
    const stored = await storedReset(email);
    expect(stored).toMatchObject({ code, attempts: 0 });
    expect(stored!.expires_at).toBeGreaterThanOrEqual(before + 15 * MINUTE);
    expect(stored!.expires_at).toBeLessThanOrEqual(Date.now() + 15 * MINUTE);
  });

  it("answers an unknown address the same 200, and mails and stores nothing", async () => {
    const unknown = randomEmail();
    expect(await jsonOf(await forgotAndSettle(unknown))).toEqual(ACCEPTED);
    expect(await mailsTo(unknown)).toEqual([]);
    expect(await storedUser(unknown)).toBeNull();
  });

  it("mails an unverified account a reset code of its own: its verification code keeps working", async () => {
    const email = randomEmail();
    expect((await register(email)).status).toBe(201);
    const verification = await mailedCode(email);
    const code = await resetCode(email);
    expect(code).toMatch(/^\d{6}$/);
    expect((await storedCode(email))!.code).toBe(verification);
    expect((await storedReset(email))!.code).toBe(code);

    expect((await call("POST", "/auth/verify-email", { email, token: verification })).status).toBe(200);
    // Verifying leaves the reset code alone.
    expect((await storedReset(email))!.code).toBe(code);
  });

  it("mails a reset code within 60 seconds of the registration mail: reset mails have an allowance of their own", async () => {
    const email = randomEmail();
    await register(email);
    expect(await jsonOf(await forgotAndSettle(email))).toEqual(ACCEPTED);
    expect(await mailsWithSubject(email, Subject.reset)).toHaveLength(1);
  });

  it("mails one client 2 reset codes an hour, a minute apart, and the address 5 an hour whoever asks; beyond, 200 and no mail", async () => {
    const email = await account();
    const from = async (ip: string) => keepRequestId(email, await callWithEnv({}, "POST", "/auth/forgot-password", { email }, { "CF-Connecting-IP": ip }));
    const resetMails = async () => (await mailsWithSubject(email, Subject.reset)).length;

    expect(await jsonOf(await from("192.0.2.1"))).toEqual(ACCEPTED);
    // Within the minute: answered alike, nothing sent.
    expect(await jsonOf(await from("192.0.2.1"))).toEqual(ACCEPTED);
    expect(await resetMails()).toBe(1);
    await pastCooldown(email);
    await from("192.0.2.1");
    await pastCooldown(email);
    const logs = captureLogs();
    await from("192.0.2.1");
    expect(logs.filter((line) => line.event === "password_reset_mail_skipped")).toEqual([
      expect.objectContaining({ level: "info", reason: "client_hourly_cap", email: maskEmail(email), retryAfterSeconds: expect.any(Number) }),
    ]);
    vi.restoreAllMocks();
    expect(await resetMails()).toBe(2);

    // Other clients share what is left of the address's five.
    for (const ip of ["192.0.2.2", "192.0.2.2", "2001:db8::1"]) {
      await pastCooldown(email);
      await from(ip);
    }
    expect(await resetMails()).toBe(5);
    await pastCooldown(email);
    const capped = captureLogs();
    expect(await jsonOf(await from("192.0.2.3"))).toEqual(ACCEPTED);
    expect(capped.filter((line) => line.event === "password_reset_mail_skipped")).toEqual([
      expect.objectContaining({ reason: "address_hourly_cap", email: maskEmail(email) }),
    ]);
    vi.restoreAllMocks();
    expect(await resetMails()).toBe(5);
  });

  it("logs the reset mail it skipped within a minute of the client's last one, with the address masked", async () => {
    const email = await account();
    await forgotAndSettle(email);
    const logs = captureLogs();
    expect((await forgotAndSettle(email)).status).toBe(200);
    const skipped = logs.filter((line) => line.event === "password_reset_mail_skipped");
    expect(skipped).toEqual([
      expect.objectContaining({ level: "info", reason: "client_cooldown", email: maskEmail(email), retryAfterSeconds: expect.any(Number) }),
    ]);
    expect(skipped[0]?.retryAfterSeconds).toBeGreaterThan(0);
    expect(skipped[0]?.retryAfterSeconds).toBeLessThanOrEqual(60);
    expect(JSON.stringify(logs)).not.toContain(email);
    vi.restoreAllMocks();
    expect(await mailsWithSubject(email, Subject.reset)).toHaveLength(1);
  });

  it("logs nothing skipped for an unknown address (there is no mail to skip)", async () => {
    const logs = captureLogs();
    expect((await forgotAndSettle(randomEmail())).status).toBe(200);
    expect(logs.filter((line) => line.event === "password_reset_mail_skipped")).toEqual([]);
  });

  it.each([
    ["no email", {}, "Email is required."],
    ["a blank email", { email: "  " }, "Email is required."],
    ["a number", { email: 42 }, "Email must be a string."],
    ["an object", { email: { $ne: null } }, "Email must be a string."],
  ])("answers 400 plain text for %s", async (_case, body, message) => {
    expect(await textOf(await call("POST", "/auth/forgot-password", body))).toEqual({ status: 400, type: TEXT, body: message });
  });
});

describe("POST /auth/reset-password", () => {
  it("sets the new password, uses the code up and mails a notice", async () => {
    const email = await account();
    const code = await resetCode(email);
    expect(await textOf(await reset(email, code))).toEqual({ status: 200, type: TEXT, body: PASSWORD_RESET });

    expect(await textOf(await login(email))).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
    expect((await login(email, NEW_PASSWORD)).status).toBe(200);
    expect(await storedReset(email)).toBeNull();
    expect(await mailsWithSubject(email, Subject.passwordChanged)).toEqual([
      { from: "Notes API Test <sender@notes.test>", subject: Subject.passwordChanged, text: PASSWORD_CHANGED_TEXT },
    ]);
    // Used once: the same code again is refused and changes nothing.
    expect(await textOf(await reset(email, code, "yet another passphrase"))).toEqual({ status: 401, type: TEXT, body: INVALID_RESET_CODE });
    expect((await login(email, NEW_PASSWORD)).status).toBe(200);
  });

  it("accepts the code with white space around it, and the address in another letter case", async () => {
    const email = await account();
    const code = await resetCode(email);
    expect((await reset(` ${email.toUpperCase()} `, ` ${code}\n`)).status).toBe(200);
    expect((await login(email, NEW_PASSWORD)).status).toBe(200);
  });

  it("ends every session of the account at once", async () => {
    const email = await account();
    const phone = await logIn(email);
    const laptop = await logIn(email);
    const userId = (await storedUser(email))!.id;
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", userId)).toBe(2);

    expect((await reset(email, await resetCode(email))).status).toBe(200);
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", userId)).toBe(0);
    await expectEnded(phone);
    await expectEnded(laptop);
  });

  it("leaves no session to a login that checked the old password just before the reset", async () => {
    const email = await account();
    const code = await resetCode(email);
    // Whoever holds the old password (the squatter, the thief) logs in again and again; one of those logins
    // has checked the password when the owner's reset goes through.
    const racing = await heldLogin(email);
    expect((await reset(email, code)).status).toBe(200);

    // Refused, or a session as dead as every other one the reset ended.
    const response = await racing.release();
    if (response.status === 200) {
      await expectEnded((await response.json()) as Tokens);
    } else {
      expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
    }
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", (await storedUser(email))!.id)).toBe(0);
  });

  it("clears the login lock", async () => {
    const email = await account();
    await lockLogin(email);
    expect((await reset(email, await resetCode(email))).status).toBe(200);
    expect(await loginFailuresRow(email)).toBeNull();
    expect((await login(email, NEW_PASSWORD)).status).toBe(200);
  });

  it("verifies an unverified account and retires its verification code", async () => {
    const email = randomEmail();
    await quietRegister(email);
    expect((await login(email)).status).toBe(403);
    expect((await reset(email, await resetCode(email))).status).toBe(200);
    expect((await storedUser(email))!.isVerified).toBe(1);
    expect(await storedCode(email)).toBeNull();
    expect(await storedReset(email)).toBeNull();
    expect((await login(email, NEW_PASSWORD)).status).toBe(200);
  });

  it("answers 401 for a wrong code, or one of five digits, and counts each try", async () => {
    const email = await account();
    const code = await resetCode(email);
    for (const wrong of [otherCode(code), code.slice(1)]) {
      expect(await textOf(await reset(email, wrong))).toEqual({ status: 401, type: TEXT, body: INVALID_RESET_CODE });
    }
    expect(await storedReset(email)).toMatchObject({ code, attempts: 2 });
    expect((await login(email)).status).toBe(200);
  });

  it("answers 401 for an address without an account, or without a reset code", async () => {
    expect(await textOf(await reset(randomEmail(), "123456"))).toEqual({ status: 401, type: TEXT, body: INVALID_RESET_CODE });
    const email = await account();
    expect(await textOf(await reset(email, "123456"))).toEqual({ status: 401, type: TEXT, body: INVALID_RESET_CODE });
  });

  it("does not take the account's verification code as a reset code, nor the reset code as a verification code", async () => {
    const email = randomEmail();
    await register(email);
    const verification = await mailedCode(email);
    const code = await resetCode(email);
    expect(await textOf(await reset(email, verification))).toEqual({ status: 401, type: TEXT, body: INVALID_RESET_CODE });
    // Nor the other way round.
    expect(await textOf(await call("POST", "/auth/verify-email", { email, token: code }))).toEqual({
      status: 401,
      type: TEXT,
      body: "Invalid or expired verification token.",
    });
    expect((await storedUser(email))!.isVerified).toBe(0);
  });

  it("answers 401 for an expired code, and keeps the old password", async () => {
    const email = await account();
    const code = await resetCode(email);
    await env.DB.prepare("UPDATE reset_requests SET expires_at = ? WHERE code = ?").bind(Date.now() - 1, code).run();
    expect(await textOf(await reset(email, code))).toEqual({ status: 401, type: TEXT, body: INVALID_RESET_CODE });
    expect((await login(email)).status).toBe(200);
  });

  it("voids the code after five wrong tries: the right one is then refused", async () => {
    const email = await account();
    const code = await resetCode(email);
    for (let i = 0; i < 5; i++) {
      expect(await textOf(await reset(email, otherCode(code)))).toEqual({ status: 401, type: TEXT, body: INVALID_RESET_CODE });
    }
    expect(await textOf(await reset(email, code))).toEqual({ status: 401, type: TEXT, body: INVALID_RESET_CODE });
    expect(await storedReset(email)).toMatchObject({ code, attempts: 5 });
    expect((await login(email)).status).toBe(200);
  });

  it("compares at most 5 codes of 40 wrong ones and the right one sent together, and refuses the right one", async () => {
    const email = await account();
    const code = await resetCode(email);
    const responses = await Promise.all([...Array.from({ length: 40 }, () => reset(email, otherCode(code))), reset(email, code)]);

    // Five tries were claimed and compared; the other 36 found the code void before any comparison.
    expect(tally(responses)).toEqual({ 401: 41 });
    expect(await textOf(responses.at(-1)!)).toEqual({ status: 401, type: TEXT, body: INVALID_RESET_CODE });
    expect(await storedReset(email)).toMatchObject({ code, attempts: 5 });
    expect((await login(email)).status).toBe(200);
    expect(await textOf(await login(email, NEW_PASSWORD))).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
  });

  it("resets once for 20 concurrent requests with the right code: one 200, the rest 401, one notice", async () => {
    const email = await account();
    const code = await resetCode(email);
    const responses = await Promise.all(Array.from({ length: 20 }, () => reset(email, code)));
    expect(tally(responses)).toEqual({ 200: 1, 401: 19 });
    expect(await storedReset(email)).toBeNull();
    expect((await login(email, NEW_PASSWORD)).status).toBe(200);
    expect(await mailsWithSubject(email, Subject.passwordChanged)).toHaveLength(1);
  });

  it("refuses the right code with another request's id, and counts that try on the other request only", async () => {
    const email = await account();
    const code = await resetCode(email);
    const own = lastRequestId(email);
    const other = await resetCode(email);
    expect(await textOf(await reset(email, code, NEW_PASSWORD, lastRequestId(email)))).toEqual({ status: 401, type: TEXT, body: INVALID_RESET_CODE });
    const attempts = await env.DB.prepare("SELECT code, attempts FROM reset_requests WHERE id IN (?, ?) ORDER BY attempts").bind(own, lastRequestId(email)).all();
    expect(attempts.results).toEqual([
      { code, attempts: 0 },
      { code: other, attempts: 1 },
    ]);
    expect((await reset(email, code, NEW_PASSWORD, own)).status).toBe(200);
  });

  it("applies register's password rules (400), and a refused password leaves the code untried", async () => {
    const email = await account();
    const code = await resetCode(email);
    for (const [password, message] of [
      ["short", "Password must be at least 8 characters long."],
      ["é".repeat(37), "Password must be at most 72 bytes long (UTF-8)."],
    ]) {
      expect(await textOf(await reset(email, code, password))).toEqual({ status: 400, type: TEXT, body: message });
    }
    expect(await storedReset(email)).toMatchObject({ code, attempts: 0 });
    expect((await reset(email, code)).status).toBe(200);
  });

  it.each([
    [{ token: "123456", password: NEW_PASSWORD }, "Email, token and password are required."],
    [{ email: "a@example.com", password: NEW_PASSWORD }, "Email, token and password are required."],
    [{ email: "a@example.com", token: "123456" }, "Email, token and password are required."],
    [{ email: "a@example.com", token: " ", password: NEW_PASSWORD }, "Email, token and password are required."],
    [{ email: "a@example.com", token: "123456", password: "" }, "Email, token and password are required."],
    [{ email: "a@example.com", token: 123456, password: NEW_PASSWORD }, "Email, token and password must be strings."],
    [{ email: ["a@example.com"], token: "123456", password: NEW_PASSWORD }, "Email, token and password must be strings."],
    [{ email: "a@example.com", token: "123456", password: 12345678 }, "Email, token and password must be strings."],
    [{ email: "a@example.com", token: "123456", password: NEW_PASSWORD }, "Request id is required: send the request_id of the forgot-password answer."],
    [{ email: "a@example.com", token: "123456", password: NEW_PASSWORD, request_id: " " }, "Request id is required: send the request_id of the forgot-password answer."],
    [{ email: "a@example.com", token: "123456", password: NEW_PASSWORD, request_id: 7 }, "Request id must be a string."],
  ])("answers 400 plain text for %j", async (body, message) => {
    expect(await textOf(await call("POST", "/auth/reset-password", body))).toEqual({ status: 400, type: TEXT, body: message });
  });
});

describe("taking back an address someone else registered", () => {
  it("lets the owner of the mailbox reset the squatter's password and log in; the squatter's password is dead", async () => {
    const victim = randomEmail("victim");
    const attackerPassword = "the attacker's password";
    expect((await register(victim, attackerPassword)).status).toBe(201);
    expect(await textOf(await register(victim, PASSWORD))).toEqual({ status: 409, type: TEXT, body: USER_EXISTS });

    // The victim reads the reset code in their own mailbox (a minute after the squatter's registration mail).
    const code = await resetCode(victim);
    expect(await textOf(await reset(victim, code, PASSWORD))).toEqual({ status: 200, type: TEXT, body: PASSWORD_RESET });

    const { token } = await logIn(victim);
    expect(await jsonOf(await me(token))).toMatchObject({ status: 200, body: { email: victim, verified: true } });
    expect(await textOf(await login(victim, attackerPassword))).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
  });
});

describe("unverified accounts expire", () => {
  it("deletes an account still unverified 7 days after registering, with its codes; the address is free again", async () => {
    const expired = randomEmail("expired");
    await quietRegister(expired);
    await resetCode(expired); // a code of another purpose too
    const expiredId = (await storedUser(expired))!.id;
    await setUser(expired, { createdAt: Date.now() - 7 * DAY - MINUTE });

    const fresh = randomEmail("fresh");
    await quietRegister(fresh);
    await setUser(fresh, { createdAt: Date.now() - 6 * DAY });
    const verifiedOld = await account();
    await setUser(verifiedOld, { createdAt: Date.now() - 30 * DAY });

    await fireCron();
    expect(await storedUser(expired)).toBeNull();
    // Accounts registered after it hold higher ids, so none can have taken its id yet.
    expect(await count("SELECT count(*) AS n FROM one_time_codes WHERE user_id = ?", expiredId)).toBe(0);
    expect(await storedUser(fresh)).not.toBeNull();
    expect(await storedCode(fresh)).not.toBeNull();
    expect(await storedUser(verifiedOld)).not.toBeNull();

    expect(await textOf(await quietRegister(expired))).toEqual({
      status: 201,
      type: TEXT,
      body: "User created. Please check your email for a verification code.",
    });
  });
});

describe("POST /auth/change-password", () => {
  it("changes the password, ends every other session, keeps the current one and mails a notice", async () => {
    const email = await account();
    const current = await logIn(email);
    const other = await logIn(email);

    expect(await textOf(await changePassword(current.token, PASSWORD))).toEqual({ status: 200, type: TEXT, body: "Password changed." });
    await expectEnded(other);
    expect((await me(current.token)).status).toBe(200);
    expect((await refresh(current.refresh_token)).status).toBe(200);

    expect(await textOf(await login(email))).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
    expect((await login(email, NEW_PASSWORD)).status).toBe(200);
    expect(await mailsWithSubject(email, Subject.passwordChanged)).toEqual([
      { from: "Notes API Test <sender@notes.test>", subject: Subject.passwordChanged, text: PASSWORD_CHANGED_TEXT },
    ]);
  });

  it("leaves no other session to a login that checked the old password just before the change", async () => {
    const email = await account();
    const current = await logIn(email);
    const racing = await heldLogin(email);
    expect((await changePassword(current.token, PASSWORD)).status).toBe(200);

    // Refused, or a session as dead as the other ones the change ended; the current one stays.
    const response = await racing.release();
    if (response.status === 200) {
      await expectEnded((await response.json()) as Tokens);
    } else {
      expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
    }
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", (await storedUser(email))!.id)).toBe(1);
  });

  it("answers 401 for a wrong current password and changes nothing", async () => {
    const email = await account();
    const current = await logIn(email);
    const other = await logIn(email);
    expect(await textOf(await changePassword(current.token, "not my password"))).toEqual({ status: 401, type: TEXT, body: WRONG_PASSWORD });
    expect((await login(email)).status).toBe(200);
    expect((await me(other.token)).status).toBe(200);
    expect(await mailsWithSubject(email, Subject.passwordChanged)).toEqual([]);
  });

  it("ends the session at the fifth wrong current password, leaving the address's login alone", async () => {
    const email = await account();
    const { token } = await logIn(email);
    for (let i = 0; i < 5; i++) expect(await textOf(await changePassword(token, "not my password"))).toEqual({ status: 401, type: TEXT, body: WRONG_PASSWORD });

    expect(await textOf(await changePassword(token, PASSWORD))).toEqual({ status: 401, type: TEXT, body: INVALID_ACCESS });
    expect((await me(token)).status).toBe(401);
    // Nothing changed, and the address is not locked: the right password still logs in.
    expect((await login(email)).status).toBe(200);
  });

  it("answers 401 with WWW-Authenticate without a token, with a bad one, and with the token of an ended session", async () => {
    const { token } = await logIn(await account());
    expect((await call("POST", "/auth/logout", undefined, bearer(token))).status).toBe(204);
    for (const headers of [{}, { Authorization: "Bearer not-a-token" }, bearer(token)]) {
      const response = await call("POST", "/auth/change-password", { current_password: PASSWORD, new_password: NEW_PASSWORD }, headers);
      expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: INVALID_ACCESS });
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
    }
  });

  it("answers 400 plain text for a missing or mistyped field, or a new password register would refuse", async () => {
    const email = await account();
    const { token } = await logIn(email);
    for (const [body, message] of [
      [{ new_password: NEW_PASSWORD }, "Current and new password are required."],
      [{ current_password: PASSWORD }, "Current and new password are required."],
      [{ current_password: "", new_password: NEW_PASSWORD }, "Current and new password are required."],
      [{ current_password: PASSWORD, new_password: null }, "Current and new password are required."],
      [{ current_password: 12345678, new_password: NEW_PASSWORD }, "Current and new password must be strings."],
      [{ current_password: PASSWORD, new_password: ["x"] }, "Current and new password must be strings."],
      [{ current_password: PASSWORD, new_password: "short" }, "Password must be at least 8 characters long."],
      [{ current_password: PASSWORD, new_password: "é".repeat(37) }, "Password must be at most 72 bytes long (UTF-8)."],
    ] as const) {
      expect(await textOf(await call("POST", "/auth/change-password", body, bearer(token)))).toEqual({ status: 400, type: TEXT, body: message });
    }
    expect((await login(email)).status).toBe(200);
    expect(await loginFailuresRow(email)).toBeNull();
  });
});

describe("POST /auth/change-email", () => {
  it("mails a confirmation code to the new address, and changes nothing yet", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const newEmail = randomEmail("new");
    const code = await emailChangeCode(email, token, newEmail);

    expect(await mailsWithSubject(newEmail, Subject.confirmNewEmail)).toEqual([
      { from: "Notes API Test <sender@notes.test>", subject: Subject.confirmNewEmail, text: `Your email change confirmation code is: ${code}` },
    ]);
    expect(await mailsTo(email)).toEqual([]); // nothing to the old address yet
    const stored = await env.DB.prepare("SELECT code, new_email, attempts FROM one_time_codes WHERE purpose = 'change_email' AND user_id = ?")
      .bind((await storedUser(email))!.id)
      .first();
    expect(stored).toEqual({ code, new_email: newEmail, attempts: 0 });
    expect(await jsonOf(await me(token))).toMatchObject({ status: 200, body: { email } });
    expect(await storedUser(newEmail)).toBeNull();
  });

  it("answers 409 when the new address belongs to another account, and mails nothing", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const taken = randomEmail("taken");
    await quietRegister(taken);
    await pastCooldown(email);
    expect(await textOf(await changeEmail(token, taken.toUpperCase()))).toEqual({ status: 409, type: TEXT, body: USER_EXISTS });
    expect(await mailsWithSubject(taken, Subject.confirmNewEmail)).toEqual([]);
  });

  it("answers 400 when the new address is the current one, in any letter case", async () => {
    const email = await account();
    const { token } = await logIn(email);
    await pastCooldown(email);
    for (const same of [email, ` ${email.toUpperCase()} `]) {
      expect(await textOf(await changeEmail(token, same))).toEqual({ status: 400, type: TEXT, body: "The new email is the current one." });
    }
  });

  it("answers 400 for an implausible new address", async () => {
    const { token } = await logIn(await account());
    for (const newEmail of ["not-an-email", "a@b", "new\u200B@example.com", "new <x@example.com>", `${"a".repeat(250)}@example.com`]) {
      expect(await textOf(await changeEmail(token, newEmail))).toEqual({ status: 400, type: TEXT, body: "Please provide a valid email address." });
    }
  });

  it("answers 401 for a wrong password, and mails nothing", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const newEmail = randomEmail("new");
    await pastCooldown(email);
    expect(await textOf(await changeEmail(token, newEmail, "not my password"))).toEqual({ status: 401, type: TEXT, body: WRONG_PASSWORD });
    expect(await mailsTo(newEmail)).toEqual([]);
    // Counted on the session, not on the address.
    expect(await loginFailuresRow(email)).toBeNull();
  });

  it("answers 429 with Retry-After for a second request within 60 seconds, and within 60 seconds of the registration mail", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const throttled = "Please wait before requesting another confirmation code.";

    const early = await changeEmail(token, randomEmail("early"));
    expect(await textOf(early)).toEqual({ status: 429, type: TEXT, body: throttled });

    const newEmail = randomEmail("new");
    await emailChangeCode(email, token, newEmail);
    const again = await changeEmail(token, newEmail);
    expect(await textOf(again)).toEqual({ status: 429, type: TEXT, body: throttled });
    const retryAfter = Number(again.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(55);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await mailsTo(newEmail)).toHaveLength(1);
  });

  it("answers 401 with WWW-Authenticate without a token", async () => {
    const response = await call("POST", "/auth/change-email", { password: PASSWORD, new_email: randomEmail() });
    expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: INVALID_ACCESS });
    expect(response.headers.get("www-authenticate")).toBe("Bearer");
  });

  it("answers 400 plain text for a missing or mistyped field", async () => {
    const { token } = await logIn(await account());
    for (const [body, message] of [
      [{ new_email: "new@example.com" }, "Password and new email are required."],
      [{ password: PASSWORD }, "Password and new email are required."],
      [{ password: PASSWORD, new_email: "" }, "Password and new email are required."],
      [{ password: 1, new_email: "new@example.com" }, "Password and new email must be strings."],
      [{ password: PASSWORD, new_email: { address: "new@example.com" } }, "Password and new email must be strings."],
    ] as const) {
      expect(await textOf(await call("POST", "/auth/change-email", body, bearer(token)))).toEqual({ status: 400, type: TEXT, body: message });
    }
  });
});

describe("POST /auth/confirm-email-change", () => {
  it("switches the address, notifies the old one, ends every other session and keeps the current one", async () => {
    const email = await account();
    const current = await logIn(email);
    const other = await logIn(email);
    const newEmail = randomEmail("new");
    const code = await emailChangeCode(email, current.token, newEmail);
    const userId = (await storedUser(email))!.id;

    expect(await textOf(await confirmEmailChange(current.token, code))).toEqual({ status: 200, type: TEXT, body: "Email changed." });
    expect(await jsonOf(await me(current.token))).toMatchObject({ status: 200, type: JSON_TYPE, body: { id: userId, email: newEmail, verified: true } });
    expect((await refresh(current.refresh_token)).status).toBe(200);
    await expectEnded(other);

    expect((await login(newEmail)).status).toBe(200);
    expect(await textOf(await login(email))).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
    expect(await mailsWithSubject(email, Subject.emailChanged)).toEqual([
      {
        from: "Notes API Test <sender@notes.test>",
        subject: Subject.emailChanged,
        text: "The email address of your account was changed to n***@example.com. If this was not you, reply to this message at once.",
      },
    ]);
    expect(await mailsWithSubject(newEmail, Subject.emailChanged)).toEqual([]);
    expect(await count("SELECT count(*) AS n FROM one_time_codes WHERE purpose = 'change_email' AND user_id = ?", userId)).toBe(0);

    // The code is used up, and the old address is free for anyone.
    expect(await textOf(await confirmEmailChange(current.token, code))).toEqual({ status: 401, type: TEXT, body: INVALID_CONFIRMATION_CODE });
    expect((await quietRegister(email)).status).toBe(201);
  });

  it("answers 401, not 409, to a confirmation that lost the race to another with the same code (a double submit)", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const newEmail = randomEmail("new");
    const code = await emailChangeCode(email, token, newEmail);

    // The first confirmation has claimed its try and is about to switch when the second one arrives,
    // claims a try too and switches.
    const first = await holdRequest(/^update "users" set "email"/i, (db) =>
      callWithEnv({ DB: db }, "POST", "/auth/confirm-email-change", { token: code }, bearer(token)),
    );
    expect(await textOf(await confirmEmailChange(token, code))).toEqual({ status: 200, type: TEXT, body: "Email changed." });

    // The address is the caller's own now: no one else holds it, the code is simply used up.
    expect(await textOf(await first.release())).toEqual({ status: 401, type: TEXT, body: INVALID_CONFIRMATION_CODE });
    expect(await jsonOf(await me(token))).toMatchObject({ status: 200, body: { email: newEmail } });
    expect(await mailsWithSubject(email, Subject.emailChanged)).toHaveLength(1);
  });

  it("retires a reset code mailed to the old address: it no longer resets the account", async () => {
    const email = await account();
    const { token } = await logIn(email);
    // Someone who reads the old mailbox asked for a reset code just before the owner moved away from it.
    const oldMailboxCode = await resetCode(email);
    const newEmail = randomEmail("new");
    expect((await confirmEmailChange(token, await emailChangeCode(email, token, newEmail))).status).toBe(200);

    expect(await textOf(await reset(newEmail, oldMailboxCode, "the old mailbox's password", lastRequestId(email)))).toEqual({ status: 401, type: TEXT, body: INVALID_RESET_CODE });
    expect((await login(newEmail)).status).toBe(200);
    expect((await me(token)).status).toBe(200);
  });

  it("answers 401 for a wrong code, and the address stays", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const newEmail = randomEmail("new");
    const code = await emailChangeCode(email, token, newEmail);
    expect(await textOf(await confirmEmailChange(token, otherCode(code)))).toEqual({ status: 401, type: TEXT, body: INVALID_CONFIRMATION_CODE });
    expect(await jsonOf(await me(token))).toMatchObject({ status: 200, body: { email } });
    expect(await storedUser(newEmail)).toBeNull();
    // A wrong try does not burn the code.
    expect((await confirmEmailChange(token, code)).status).toBe(200);
  });

  it("answers 401 without a pending change, and for an expired code", async () => {
    const email = await account();
    const { token } = await logIn(email);
    expect(await textOf(await confirmEmailChange(token, "123456"))).toEqual({ status: 401, type: TEXT, body: INVALID_CONFIRMATION_CODE });

    const code = await emailChangeCode(email, token, randomEmail("new"));
    await setCode(email, { expires_at: Date.now() - 1 }, "change_email");
    expect(await textOf(await confirmEmailChange(token, code))).toEqual({ status: 401, type: TEXT, body: INVALID_CONFIRMATION_CODE });
    expect(await jsonOf(await me(token))).toMatchObject({ status: 200, body: { email } });
  });

  it("does not take another account's code", async () => {
    const mine = await account();
    const theirs = await account();
    const myToken = (await logIn(mine)).token;
    const theirToken = (await logIn(theirs)).token;
    const code = await emailChangeCode(theirs, theirToken, randomEmail("new"));
    expect(await textOf(await confirmEmailChange(myToken, code))).toEqual({ status: 401, type: TEXT, body: INVALID_CONFIRMATION_CODE });
    expect(await jsonOf(await me(myToken))).toMatchObject({ status: 200, body: { email: mine } });
  });

  it("answers 409 when the new address was registered in between, and the address stays", async () => {
    const email = await account();
    const current = await logIn(email);
    const other = await logIn(email);
    const newEmail = randomEmail("new");
    const code = await emailChangeCode(email, current.token, newEmail);
    expect((await quietRegister(newEmail, "someone else's password")).status).toBe(201);

    expect(await textOf(await confirmEmailChange(current.token, code))).toEqual({ status: 409, type: TEXT, body: USER_EXISTS });
    expect(await jsonOf(await me(current.token))).toMatchObject({ status: 200, body: { email } });
    expect((await me(other.token)).status).toBe(200);
    expect((await login(email)).status).toBe(200);
    expect(await mailsWithSubject(email, Subject.emailChanged)).toEqual([]);
  });

  it("answers 401 with WWW-Authenticate without a token", async () => {
    const response = await call("POST", "/auth/confirm-email-change", { token: "123456" });
    expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: INVALID_ACCESS });
    expect(response.headers.get("www-authenticate")).toBe("Bearer");
  });

  it("answers 400 plain text for a missing or mistyped code", async () => {
    const { token } = await logIn(await account());
    for (const [body, message] of [
      [{}, "Token is required."],
      [{ token: "  " }, "Token is required."],
      [{ token: 123456 }, "Token must be a string."],
    ] as const) {
      expect(await textOf(await call("POST", "/auth/confirm-email-change", body, bearer(token)))).toEqual({ status: 400, type: TEXT, body: message });
    }
  });
});

describe("DELETE /auth/account", () => {
  /** The same app with NOTES_AUTH=required. */
  function privateNotes(method: string, path: string, token: string, body?: unknown): Promise<Response> {
    return callWithEnv({ NOTES_AUTH: "required" }, method, path, body, bearer(token));
  }

  it("deletes the account with its sessions, codes, login attempts and notes; every token dies at once; the address is free", async () => {
    const neighbour = await logIn(await account());
    const kept = (await (await privateNotes("POST", "/notes", neighbour.token, { title: "theirs", content: "c" })).json()) as { id: number };
    const email = await account();
    const current = await logIn(email);
    const other = await logIn(email);
    const userId = (await storedUser(email))!.id;
    for (const title of ["mine 1", "mine 2"]) expect((await privateNotes("POST", "/notes", current.token, { title, content: "c" })).status).toBe(201);
    await resetCode(email);
    expect((await login(email, "wrong password")).status).toBe(401);

    const response = await deleteAccount(current.token);
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");

    expect(await storedUser(email)).toBeNull();
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", userId)).toBe(0);
    expect(await count("SELECT count(*) AS n FROM one_time_codes WHERE user_id = ?", userId)).toBe(0);
    expect(await count("SELECT count(*) AS n FROM notes WHERE user_id = ?", userId)).toBe(0);
    expect(await loginFailuresRow(email)).toBeNull();
    expect(await jsonOf(await privateNotes("GET", `/notes/${kept.id}`, neighbour.token))).toMatchObject({ status: 200, body: { title: "theirs" } });

    await expectEnded(current);
    await expectEnded(other);
    expect((await privateNotes("GET", "/notes", current.token)).status).toBe(401);

    // The address registers again, and as the newest account it gets the old id back (see the schema):
    // the old tokens name a live user again, with a live session, and stay dead all the same.
    expect((await quietRegister(email)).status).toBe(201);
    expect((await storedUser(email))!.id).toBe(userId);
    expect((await call("POST", "/auth/verify-email", { email, token: (await storedCode(email))!.code })).status).toBe(200);
    const again = await logIn(email);
    expect((await me(again.token)).status).toBe(200);
    await expectEnded(current);
    await expectEnded(other);
    expect(await jsonOf(await privateNotes("GET", "/notes", again.token))).toEqual({ status: 200, type: JSON_TYPE, body: [] });
  });

  it("answers 401, never a 500, to a login that checked the password just before the deletion", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const racing = await heldLogin(email);
    expect((await deleteAccount(token)).status).toBe(204);

    // The account it checked is gone: its session must not be written (nor fail on the foreign key).
    expect(await textOf(await racing.release())).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
    expect(await storedUser(email)).toBeNull();
  });

  it("answers 401 for a wrong password and deletes nothing", async () => {
    const email = await account();
    const { token } = await logIn(email);
    expect(await textOf(await deleteAccount(token, "not my password"))).toEqual({ status: 401, type: TEXT, body: WRONG_PASSWORD });
    expect(await storedUser(email)).not.toBeNull();
    expect((await me(token)).status).toBe(200);
  });

  it("deletes the account while the address's login is locked: the session proved the owner", async () => {
    const email = await account();
    const { token } = await logIn(email);
    await lockLogin(email);
    expect((await deleteAccount(token)).status).toBe(204);
    expect(await storedUser(email)).toBeNull();
  });

  it("answers 401 with WWW-Authenticate without a token, and for a token of an ended session", async () => {
    const { token } = await logIn(await account());
    await call("POST", "/auth/logout", undefined, bearer(token));
    for (const headers of [{}, bearer(token)]) {
      const response = await call("DELETE", "/auth/account", { password: PASSWORD }, headers);
      expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: INVALID_ACCESS });
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
    }
  });

  it("answers 400 plain text for a missing or mistyped password, and deletes nothing", async () => {
    const email = await account();
    const { token } = await logIn(email);
    for (const [body, message] of [
      [{}, "Password is required."],
      [{ password: "" }, "Password is required."],
      [{ password: null }, "Password is required."],
      [{ password: 12345678 }, "Password must be a string."],
    ] as const) {
      expect(await textOf(await call("DELETE", "/auth/account", body, bearer(token)))).toEqual({ status: 400, type: TEXT, body: message });
    }
    expect(await storedUser(email)).not.toBeNull();
  });
});

describe("malformed bodies on the new endpoints", () => {
  const bodies: Array<[string, string, string]> = [
    ["non-JSON", "email=a@example.com", "Request body must be valid JSON."],
    ["truncated JSON", '{"email":', "Request body must be valid JSON."],
    ["an array", '["a@example.com"]', "Request body must be a JSON object."],
    ["null", "null", "Request body must be a JSON object."],
    ["a number", "42", "Request body must be a JSON object."],
    ["an empty body", "", "Request body must be a JSON object."],
  ];
  const endpoints: Array<[string, string, Record<string, unknown>, string]> = [
    ["POST", "/auth/forgot-password", { email: 1 }, "Email must be a string."],
    ["POST", "/auth/reset-password", { email: 1, token: 2, password: 3 }, "Email, token and password must be strings."],
    ["POST", "/auth/change-password", { current_password: 1, new_password: 2 }, "Current and new password must be strings."],
    ["POST", "/auth/change-email", { password: 1, new_email: 2 }, "Password and new email must be strings."],
    ["POST", "/auth/confirm-email-change", { token: 123456 }, "Token must be a string."],
    ["DELETE", "/auth/account", { password: 1 }, "Password must be a string."],
  ];

  it.each(endpoints)("%s %s answers 400 plain text for each, never a 500", async (method, path, numbers, numbersMessage) => {
    const email = await account();
    const { token } = await logIn(email);
    for (const [label, body, message] of bodies) {
      expect(await textOf(await call(method, path, body, bearer(token))), label).toEqual({ status: 400, type: TEXT, body: message });
    }
    expect(await textOf(await call(method, path, numbers, bearer(token)))).toEqual({ status: 400, type: TEXT, body: numbersMessage });
    expect((await me(token)).status).toBe(200);
  });
});
