import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { maskEmail } from "../../../src/lib/log";
import { MINUTE } from "../../../src/lib/units";
import { Contract } from "../../contract";
import {
  ACCEPTED,
  account,
  expectEnded,
  forgot,
  heldLogin,
  keepRequestId,
  lastRequestId,
  lockLogin,
  postLogin,
  logIn,
  loginFailuresRow,
  me,
  NEW_PASSWORD,
  otherCode,
  PASSWORD_CHANGED_TEXT,
  pastCooldown,
  quietRegister,
  register,
  reset,
  resetCode,
  storedCode,
  storedUser,
  type Tokens,
} from "../../support/accounts";
import {
  call,
  callWithEnv,
  captureLogs,
  count,
  jsonOf,
  PASSWORD,
  randomEmail,
  tally,
  TEXT,
  textOf,
} from "../../support/app";
import {
  awaitMails,
  codeIn,
  CodePrefix,
  mailedCode,
  mailsTo,
  mailsWithSubject,
  requestIdIn,
  Subject,
} from "../../support/mail";

/**
 * A reset mail: the code, the request id it is bound to, what to do with them (no APP_URL in tests), and the
 * reassurance.
 */
const RESET_MAIL = new RegExp(
  "^Your password reset code is: \\d{6}\\n" +
    "Its request id is: [A-Za-z0-9_-]{22}\\n" +
    "Send both with a new password to reset it \\(POST /auth/reset-password\\)\\.\\n" +
    "If you did not ask for this, ignore this mail: your password stays as it is\\.$",
);

/**
 * Account recovery (forgot and reset password, src/auth/recovery/), through the deployed app's fetch
 * handler, with the codes read from the mails the loopback SMTP server received.
 */

/**
 * forgot-password through callWithEnv, which waits for the work the request left to waitUntil: after
 * it, a mail that was not sent never will be ("no mail", not "no mail yet").
 */
async function forgotAndSettle(email: string): Promise<Response> {
  return keepRequestId(email, await callWithEnv({}, "POST", "/auth/forgot-password", { email }));
}

/** The account's newest reset request as D1 holds it (null once none is left), read with plain SQL. */
async function storedReset(email: string) {
  return env.DB.prepare(
    "SELECT code, expires_at, attempts FROM reset_requests WHERE user_id = (SELECT id FROM users WHERE email = ?) ORDER BY expires_at DESC LIMIT 1",
  )
    .bind(email)
    .first<{ code: string; expires_at: number; attempts: number }>();
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("POST /auth/forgot-password", () => {
  it("mails a verified account a reset code from the configured sender, and stores it for 15 minutes", async () => {
    const email = await account();
    await pastCooldown(email);
    const before = Date.now();
    expect(await jsonOf(await forgot(email))).toEqual(ACCEPTED);

    const mails = await awaitMails(email, Subject.reset);
    expect(mails).toEqual([
      { from: "Notes API Test <sender@notes.test>", subject: Subject.reset, text: expect.stringMatching(RESET_MAIL) },
    ]);
    const code = codeIn(mails[0], CodePrefix.reset);
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
    const from = async (ip: string) =>
      keepRequestId(
        email,
        await callWithEnv({}, "POST", "/auth/forgot-password", { email }, { "CF-Connecting-IP": ip }),
      );
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
      expect.objectContaining({
        level: "info",
        reason: "client_hourly_cap",
        email: maskEmail(email),
        retryAfterSeconds: expect.any(Number),
      }),
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
      expect.objectContaining({
        level: "info",
        reason: "client_cooldown",
        email: maskEmail(email),
        retryAfterSeconds: expect.any(Number),
      }),
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
    expect(await textOf(await call("POST", "/auth/forgot-password", body))).toEqual({
      status: 400,
      type: TEXT,
      body: message,
    });
  });
});

describe("POST /auth/reset-password", () => {
  it("sets the new password, uses the code up and mails a notice", async () => {
    const email = await account();
    const code = await resetCode(email);
    expect(await textOf(await reset(email, code))).toEqual({
      status: 200,
      type: TEXT,
      body: AuthMessage.passwordReset,
    });

    expect(await textOf(await postLogin(email))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
    expect((await postLogin(email, NEW_PASSWORD)).status).toBe(200);
    expect(await storedReset(email)).toBeNull();
    expect(await mailsWithSubject(email, Subject.passwordChanged)).toEqual([
      { from: "Notes API Test <sender@notes.test>", subject: Subject.passwordChanged, text: PASSWORD_CHANGED_TEXT },
    ]);
    // Used once: the same code again is refused and changes nothing.
    expect(await textOf(await reset(email, code, "yet another passphrase"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidResetCode,
    });
    expect((await postLogin(email, NEW_PASSWORD)).status).toBe(200);
  });

  it("accepts the code with white space around it, and the address in another letter case", async () => {
    const email = await account();
    const code = await resetCode(email);
    expect((await reset(` ${email.toUpperCase()} `, ` ${code}\n`)).status).toBe(200);
    expect((await postLogin(email, NEW_PASSWORD)).status).toBe(200);
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
      expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: Contract.invalidCredentials });
    }
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", (await storedUser(email))!.id)).toBe(0);
  });

  it("clears the login lock", async () => {
    const email = await account();
    await lockLogin(email);
    expect((await reset(email, await resetCode(email))).status).toBe(200);
    expect(await loginFailuresRow(email)).toBeNull();
    expect((await postLogin(email, NEW_PASSWORD)).status).toBe(200);
  });

  it("verifies an unverified account and retires its verification code", async () => {
    const email = randomEmail();
    await quietRegister(email);
    expect((await postLogin(email)).status).toBe(403);
    expect((await reset(email, await resetCode(email))).status).toBe(200);
    expect((await storedUser(email))!.isVerified).toBe(1);
    expect(await storedCode(email)).toBeNull();
    expect(await storedReset(email)).toBeNull();
    expect((await postLogin(email, NEW_PASSWORD)).status).toBe(200);
  });

  it("answers 401 for a wrong code, or one of five digits, and counts each try", async () => {
    const email = await account();
    const code = await resetCode(email);
    for (const wrong of [otherCode(code), code.slice(1)]) {
      expect(await textOf(await reset(email, wrong))).toEqual({
        status: 401,
        type: TEXT,
        body: AuthMessage.invalidResetCode,
      });
    }
    expect(await storedReset(email)).toMatchObject({ code, attempts: 2 });
    expect((await postLogin(email)).status).toBe(200);
  });

  it("answers 401 for an address without an account, or without a reset code", async () => {
    expect(await textOf(await reset(randomEmail(), "123456"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidResetCode,
    });
    const email = await account();
    expect(await textOf(await reset(email, "123456"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidResetCode,
    });
  });

  it("does not take the account's verification code as a reset code, nor the reset code as a verification code", async () => {
    const email = randomEmail();
    await register(email);
    const verification = await mailedCode(email);
    const code = await resetCode(email);
    expect(await textOf(await reset(email, verification))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidResetCode,
    });
    // Nor the other way round.
    expect(await textOf(await call("POST", "/auth/verify-email", { email, token: code }))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidToken,
    });
    expect((await storedUser(email))!.isVerified).toBe(0);
  });

  it("answers 401 for an expired code, and keeps the old password", async () => {
    const email = await account();
    const code = await resetCode(email);
    await env.DB.prepare("UPDATE reset_requests SET expires_at = ? WHERE code = ?")
      .bind(Date.now() - 1, code)
      .run();
    expect(await textOf(await reset(email, code))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidResetCode,
    });
    expect((await postLogin(email)).status).toBe(200);
  });

  it("voids the code after five wrong tries: the right one is then refused", async () => {
    const email = await account();
    const code = await resetCode(email);
    for (let i = 0; i < 5; i++) {
      expect(await textOf(await reset(email, otherCode(code)))).toEqual({
        status: 401,
        type: TEXT,
        body: AuthMessage.invalidResetCode,
      });
    }
    expect(await textOf(await reset(email, code))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidResetCode,
    });
    expect(await storedReset(email)).toMatchObject({ code, attempts: 5 });
    expect((await postLogin(email)).status).toBe(200);
  });

  it("compares at most 5 of 40 wrong codes sent together, and then refuses the right one", async () => {
    const email = await account();
    const code = await resetCode(email);
    const responses = await Promise.all(Array.from({ length: 40 }, () => reset(email, otherCode(code))));

    // Five tries were claimed and compared; the other 35 found the code void before any comparison.
    expect(tally(responses)).toEqual({ 401: 40 });
    expect(await storedReset(email)).toMatchObject({ code, attempts: 5 });
    // The right code arrives after the burst (sent within it, it may claim one of the five tries, and then
    // rightly resets: which request the database serves first is not the client's order).
    expect(await textOf(await reset(email, code))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidResetCode,
    });
    expect(await storedReset(email)).toMatchObject({ code, attempts: 5 });
    expect((await postLogin(email)).status).toBe(200);
    expect(await textOf(await postLogin(email, NEW_PASSWORD))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
  });

  it("resets once for 20 concurrent requests with the right code: one 200, the rest 401, one notice", async () => {
    const email = await account();
    const code = await resetCode(email);
    const responses = await Promise.all(Array.from({ length: 20 }, () => reset(email, code)));
    expect(tally(responses)).toEqual({ 200: 1, 401: 19 });
    expect(await storedReset(email)).toBeNull();
    expect((await postLogin(email, NEW_PASSWORD)).status).toBe(200);
    expect(await mailsWithSubject(email, Subject.passwordChanged)).toHaveLength(1);
  });

  it("refuses the right code with another request's id, and counts that try on the other request only", async () => {
    const email = await account();
    const code = await resetCode(email);
    const own = lastRequestId(email);
    const other = await resetCode(email);
    expect(await textOf(await reset(email, code, NEW_PASSWORD, lastRequestId(email)))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidResetCode,
    });
    const attempts = await env.DB.prepare(
      "SELECT code, attempts FROM reset_requests WHERE id IN (?, ?) ORDER BY attempts",
    )
      .bind(own, lastRequestId(email))
      .all();
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
    [
      { email: ["a@example.com"], token: "123456", password: NEW_PASSWORD },
      "Email, token and password must be strings.",
    ],
    [{ email: "a@example.com", token: "123456", password: 12345678 }, "Email, token and password must be strings."],
    [
      { email: "a@example.com", token: "123456", password: NEW_PASSWORD },
      "Request id is required: send the request_id of the forgot-password answer.",
    ],
    [
      { email: "a@example.com", token: "123456", password: NEW_PASSWORD, request_id: " " },
      "Request id is required: send the request_id of the forgot-password answer.",
    ],
    [
      { email: "a@example.com", token: "123456", password: NEW_PASSWORD, request_id: 7 },
      "Request id must be a string.",
    ],
  ])("answers 400 plain text for %j", async (body, message) => {
    expect(await textOf(await call("POST", "/auth/reset-password", body))).toEqual({
      status: 400,
      type: TEXT,
      body: message,
    });
  });
});

describe("a reset asked for by someone else (F10)", () => {
  it("serves the mailbox's owner: the mail carries the code and its request id, so the owner resets with a request the attacker made", async () => {
    const email = await account();
    await pastCooldown(email);
    // The attacker asks, from their own client: they get a request id, never the code.
    const asked = await callWithEnv(
      {},
      "POST",
      "/auth/forgot-password",
      { email },
      { "CF-Connecting-IP": "203.0.113.7" },
    );
    const { request_id: attackersRequest } = (await asked.json()) as { request_id: string };
    const [mail] = await awaitMails(email, Subject.reset);
    expect(requestIdIn(mail)).toBe(attackersRequest);
    // The owner, from another device, with nothing but the mail.
    expect(await textOf(await reset(email, codeIn(mail, CodePrefix.reset), NEW_PASSWORD, requestIdIn(mail)))).toEqual({
      status: 200,
      type: TEXT,
      body: AuthMessage.passwordReset,
    });
    expect((await postLogin(email, NEW_PASSWORD)).status).toBe(200);
  });

  it("puts code, request id and address in one link to APP_URL's page when it is set", async () => {
    const email = await account();
    await pastCooldown(email);
    const asked = await callWithEnv({ APP_URL: "https://app.example.com/" }, "POST", "/auth/forgot-password", {
      email,
    });
    const { request_id: requestId } = (await asked.json()) as { request_id: string };
    const [mail] = await awaitMails(email, Subject.reset);
    const code = codeIn(mail, CodePrefix.reset);
    const link = new URL(/^Set a new password here: (\S+)$/m.exec(mail!.text)![1]!);
    expect(`${link.origin}${link.pathname}`).toBe("https://app.example.com/reset-password");
    expect(Object.fromEntries(link.searchParams)).toEqual({ email, request_id: requestId, code });
  });
});

describe("taking back an address someone else registered", () => {
  it("lets the owner of the mailbox reset the squatter's password and log in; the squatter's password is dead", async () => {
    const victim = randomEmail("victim");
    const attackerPassword = "the attacker's password";
    expect((await register(victim, attackerPassword)).status).toBe(201);
    expect(await textOf(await register(victim, PASSWORD))).toEqual({
      status: 409,
      type: TEXT,
      body: Contract.userExists,
    });

    // The victim reads the reset code in their own mailbox (a minute after the squatter's registration mail).
    const code = await resetCode(victim);
    expect(await textOf(await reset(victim, code, PASSWORD))).toEqual({
      status: 200,
      type: TEXT,
      body: AuthMessage.passwordReset,
    });

    const { token } = await logIn(victim);
    expect(await jsonOf(await me(token))).toMatchObject({ status: 200, body: { email: victim, verified: true } });
    expect(await textOf(await postLogin(victim, attackerPassword))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
  });
});
