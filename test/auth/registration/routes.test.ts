import bcrypt from "bcryptjs";
import { env } from "cloudflare:workers";
import PostalMime from "postal-mime";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { HOUR, MINUTE } from "../../../src/lib/units";
import { Contract } from "../../contract";
import {
  otherCode,
  register,
  setCode,
  setUser,
  storedCode,
  storedUser,
  verifiedAccount,
  verify,
} from "../../support/accounts";
import { call, callLeavingWork, callWithEnv, PASSWORD, randomEmail, tally, TEXT, textOf } from "../../support/app";
import { CodePrefix, codesMailed, mailedCode, mailsTo, smtpPort } from "../../support/mail";

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * A resend through callWithEnv, which waits for the work the request left to waitUntil (the mail goes
 * after the answer): after it, a mail that was not sent never will be.
 */
function resend(email: string) {
  return callWithEnv({}, "POST", "/auth/resend-verification", { email });
}

/** The codes in every verification mail sent to `email`, oldest first. */
const mailedCodes = (email: string) => codesMailed(email, CodePrefix.verification);

/** Registers an account and moves its last mail back past the 60-second cooldown. */
async function accountPastCooldown(): Promise<string> {
  const email = randomEmail();
  await register(email);
  await setUser(email, { lastMailAt: Date.now() - MINUTE });
  return email;
}

/**
 * The per-account limits under concurrent bursts, as an attacker sends them: every request of a burst
 * is launched before any answer is read. Each limit must be decided by one atomic write, so the counts
 * below are exact, not "roughly".
 */

describe("POST /auth/register", () => {
  it("creates an unverified user with a bcrypt hash and a code valid for 15 minutes", async () => {
    const email = randomEmail();
    const before = Date.now();
    expect(await textOf(await register(email))).toEqual({ status: 201, type: TEXT, body: Contract.userCreated });

    const user = await storedUser(email);
    expect(user).not.toBeNull();
    expect(user!.isVerified).toBe(0);
    expect(user!.password).not.toBe(PASSWORD);
    expect(user!.password).toMatch(/^\$2[aby]\$04\$/); // bcrypt at the configured test cost
    expect(bcrypt.compareSync(PASSWORD, user!.password)).toBe(true);
    expect(user!.createdAt).toBeGreaterThanOrEqual(before);
    expect(user!.createdAt).toBeLessThanOrEqual(Date.now());
    const code = await storedCode(email);
    expect(code!.code).toMatch(/^[1-9]\d{5}$/);
    expect(code!.expires_at).toBeGreaterThanOrEqual(before + 15 * 60_000);
    expect(code!.expires_at).toBeLessThanOrEqual(Date.now() + 15 * 60_000);
    expect(code!.attempts).toBe(0);
  });

  it("mails the stored code from the configured sender, authenticated with the mail account", async () => {
    const email = randomEmail();
    await register(email);
    const mails = await mailsTo(email);
    expect(mails).toHaveLength(1);
    const mail = mails[0]!;
    expect(mail.server).toBe("mailbox");
    expect(mail.username).toBe(env.MAIL_EMAIL);
    expect(mail.password).toBe(env.MAIL_APP_PASSWORD);
    expect(mail.mailFrom).toBe(env.MAIL_EMAIL);
    expect(mail.rcptTo).toEqual([email]);

    const parsed = await PostalMime.parse(mail.raw);
    expect(parsed.from).toEqual({ name: env.MAIL_FROM_NAME, address: env.MAIL_EMAIL });
    expect(parsed.to).toEqual([{ name: "", address: email }]);
    expect(parsed.subject).toBe(Contract.verificationSubject);
    const code = (await storedCode(email))!.code;
    expect(parsed.text?.trim()).toBe(`Your verification code is: ${code}`);
  });

  it("returns 409 when the e-mail is taken, in any letter case, and keeps the first account", async () => {
    const email = randomEmail();
    await register(email);
    const first = await storedUser(email);
    const again = await register(`  ${email.toUpperCase()} `, "another password");
    expect(await textOf(again)).toEqual({ status: 409, type: TEXT, body: Contract.userExists });
    expect(await storedUser(email)).toEqual(first);
    expect(await mailsTo(email)).toHaveLength(1);
  });

  it("stores the e-mail trimmed and lowercased", async () => {
    const email = randomEmail();
    expect((await register(`  ${email.toUpperCase()}  `)).status).toBe(201);
    expect((await storedUser(email))?.email).toBe(email);
    expect(await mailsTo(email)).toHaveLength(1);
  });

  it("gives concurrent registrations of one e-mail exactly one 201 and 409 for the rest", async () => {
    const email = randomEmail();
    const responses = await Promise.all(Array.from({ length: 6 }, () => register(email)));
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409]);
    const { results } = await env.DB.prepare("SELECT id FROM users WHERE email = ?").bind(email).all();
    expect(results).toHaveLength(1);
  });

  it("hands out sequential ids equal to the number of users, also under concurrency", async () => {
    const emails = Array.from({ length: 8 }, () => randomEmail("seq"));
    const responses = await Promise.all(emails.map((email) => register(email)));
    expect(responses.map((r) => r.status)).toEqual(Array(8).fill(201));
    const ids = (await Promise.all(emails.map(storedUser))).map((u) => u!.id).sort((a, b) => a - b);
    const total = (await env.DB.prepare("SELECT count(*) AS n FROM users").first<{ n: number }>())!.n;
    const max = (await env.DB.prepare("SELECT max(id) AS m FROM users").first<{ m: number }>())!.m;
    expect(max).toBe(total);
    expect(new Set(ids).size).toBe(8);
    expect(ids.every((id) => id >= 1 && id <= total)).toBe(true);
  });

  it.each([
    ["malformed JSON", "{not json", "Request body must be valid JSON."],
    ["an empty body", "", "Request body must be a JSON object."],
    ["a JSON array", "[]", "Request body must be a JSON object."],
    ["a JSON string", '"hello"', "Request body must be a JSON object."],
    ["no e-mail", { password: PASSWORD }, "Email and password are required."],
    ["no password", { email: "a@example.com" }, "Email and password are required."],
    ["a blank e-mail", { email: "   ", password: PASSWORD }, "Email and password are required."],
    ["a number as e-mail", { email: 42, password: PASSWORD }, "Email and password must be strings."],
    ["a number as password", { email: "a@example.com", password: 12345678 }, "Email and password must be strings."],
    ["an implausible e-mail", { email: "not-an-email", password: PASSWORD }, "Please provide a valid email address."],
    [
      "an e-mail without a dot in the domain",
      { email: "a@localhost", password: PASSWORD },
      "Please provide a valid email address.",
    ],
    [
      "an e-mail with a line break",
      { email: "a@example.com\r\nRCPT TO:<x@y.z>", password: PASSWORD },
      "Please provide a valid email address.",
    ],
    [
      "an e-mail with angle brackets",
      { email: "a>@example.com", password: PASSWORD },
      "Please provide a valid email address.",
    ],
    [
      "a lone UTF-16 surrogate in the password",
      '{"email":"a@example.com","password":"abcdefgh\\ud800"}',
      "Request body must not contain unpaired UTF-16 surrogates.",
    ],
    [
      "a 7-character password",
      { email: "a@example.com", password: "1234567" },
      "Password must be at least 8 characters long.",
    ],
    [
      "a password over 72 bytes",
      { email: "a@example.com", password: "é".repeat(37) },
      "Password must be at most 72 bytes long (UTF-8).",
    ],
  ])("returns 400 plain text for %s", async (_case, body, message) => {
    const response = await call("POST", "/auth/register", body);
    expect(await textOf(response)).toEqual({ status: 400, type: TEXT, body: message });
  });

  it("accepts a password of exactly 72 bytes and stores nothing for a refused one", async () => {
    const email = randomEmail();
    expect((await register(email, "é".repeat(37))).status).toBe(400);
    expect(await storedUser(email)).toBeNull();
    expect(await mailsTo(email)).toEqual([]);
    expect((await register(email, "é".repeat(36))).status).toBe(201);
  });
});

describe("POST /auth/verify-email", () => {
  it("verifies the account with the mailed code and clears the code", async () => {
    const email = randomEmail();
    await register(email);
    const response = await verify(email, await mailedCode(email));
    expect(await textOf(response)).toEqual({ status: 200, type: TEXT, body: Contract.emailVerified });
    const user = await storedUser(email);
    expect(user).toMatchObject({ isVerified: 1 });
    expect(await storedCode(email)).toBeNull();
  });

  it("matches the e-mail in any letter case", async () => {
    const email = randomEmail();
    await register(email);
    expect((await verify(` ${email.toUpperCase()}`, await mailedCode(email))).status).toBe(200);
  });

  it.each([
    ["no e-mail", { token: "123456" }],
    ["no token", { email: "a@example.com" }],
    ["an empty token", { email: "a@example.com", token: "" }],
    ["a null e-mail", { email: null, token: "123456" }],
  ])("returns 400 when the body has %s", async (_case, body) => {
    const response = await call("POST", "/auth/verify-email", body);
    expect(await textOf(response)).toEqual({ status: 400, type: TEXT, body: Contract.emailAndTokenRequired });
  });

  it("returns 400 when the token is not a string", async () => {
    const response = await call("POST", "/auth/verify-email", { email: "a@example.com", token: 123456 });
    expect(await textOf(response)).toEqual({ status: 400, type: TEXT, body: "Email and token must be strings." });
  });

  it("returns 400 for malformed JSON", async () => {
    const response = await call("POST", "/auth/verify-email", "{");
    expect(await textOf(response)).toEqual({ status: 400, type: TEXT, body: "Request body must be valid JSON." });
  });

  it("returns 401 for an unknown e-mail", async () => {
    const response = await verify(randomEmail(), "123456");
    expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: Contract.invalidToken });
  });

  it("returns 401 for a wrong code and leaves the account unverified", async () => {
    const email = randomEmail();
    await register(email);
    const code = await mailedCode(email);
    expect(await textOf(await verify(email, otherCode(code)))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidToken,
    });
    expect(await storedUser(email)).toMatchObject({ isVerified: 0 });
    expect(await storedCode(email)).toMatchObject({ code, attempts: 1 });
  });

  it("returns 401 for an expired code, even the right one", async () => {
    const email = randomEmail();
    await register(email);
    const code = await mailedCode(email);
    await setCode(email, { expires_at: Date.now() - 1 });
    expect(await textOf(await verify(email, code))).toEqual({ status: 401, type: TEXT, body: Contract.invalidToken });
    expect((await storedUser(email))!.isVerified).toBe(0);
  });

  it("accepts the code until the last moment of its 15 minutes", async () => {
    const email = randomEmail();
    await register(email);
    await setCode(email, { expires_at: Date.now() + 2_000 });
    expect((await verify(email, await mailedCode(email))).status).toBe(200);
  });

  it("voids the code after five wrong guesses: the right code is refused from then on", async () => {
    const email = randomEmail();
    await register(email);
    const code = await mailedCode(email);
    for (let i = 0; i < 4; i++) expect((await verify(email, otherCode(code))).status).toBe(401);
    expect((await storedCode(email))!.attempts).toBe(4);
    // Four wrong guesses leave the code usable...
    expect((await verify(email, "000000")).status).toBe(401);
    // ...the fifth voids it.
    expect(await textOf(await verify(email, code))).toEqual({ status: 401, type: TEXT, body: Contract.invalidToken });
    expect(await storedUser(email)).toMatchObject({ isVerified: 0 });
    // The refused try was not counted: the code is void at five.
    expect((await storedCode(email))!.attempts).toBe(5);
  });

  it("lets the right code through after four wrong guesses", async () => {
    const email = randomEmail();
    await register(email);
    const code = await mailedCode(email);
    for (let i = 0; i < 4; i++) await verify(email, otherCode(code));
    expect((await verify(email, code)).status).toBe(200);
  });

  it("does not let concurrent wrong guesses exceed five tries at one code", async () => {
    const email = randomEmail();
    await register(email);
    const code = await mailedCode(email);
    await Promise.all(Array.from({ length: 8 }, () => verify(email, otherCode(code))));
    expect((await verify(email, code)).status).toBe(401);
  });

  it("returns 401 for an account that is already verified", async () => {
    const email = await verifiedAccount();
    expect(await textOf(await verify(email, "123456"))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidToken,
    });
  });
});

describe("POST /auth/resend-verification", () => {
  it("answers before it sends the mail, so an unverified address answers as fast as an unknown one", async () => {
    const email = randomEmail();
    await register(email);
    await setUser(email, { lastMailAt: Date.now() - MINUTE });
    // The silent peer never greets: the mail is still being tried when the answer is here.
    const { response, settled } = await callLeavingWork(
      { SMTP_PORT: smtpPort("silent") },
      "POST",
      "/auth/resend-verification",
      { email },
    );
    let mailDone = false;
    const done = settled.then(() => (mailDone = true));
    expect(await textOf(response)).toEqual({ status: 200, type: TEXT, body: AuthMessage.resendAccepted });
    expect(mailDone).toBe(false);
    await done;
  });

  it("re-sends the current code and restarts its 15 minutes, without touching its attempt count", async () => {
    const email = await accountPastCooldown();
    const [code] = await mailedCodes(email);
    await verify(email, otherCode(code!));
    await setCode(email, { expires_at: Date.now() + MINUTE });
    await setUser(email, { lastMailAt: Date.now() - MINUTE });

    const before = Date.now();
    expect(await textOf(await resend(email))).toEqual({ status: 200, type: TEXT, body: AuthMessage.resendAccepted });
    expect(await mailedCodes(email)).toEqual([code, code]);
    const stored = await storedCode(email);
    expect(stored).toMatchObject({ code, attempts: 1 });
    expect(stored!.expires_at).toBeGreaterThanOrEqual(before + 15 * MINUTE);
    expect((await verify(email, code!)).status).toBe(200);
  });

  it("sends a new code with a fresh attempt count when the current one was voided", async () => {
    const email = await accountPastCooldown();
    const [code] = await mailedCodes(email);
    for (let i = 0; i < 5; i++) await verify(email, otherCode(code!));
    expect((await storedCode(email))!.attempts).toBe(5);

    expect((await resend(email)).status).toBe(200);
    const codes = await mailedCodes(email);
    expect(codes).toHaveLength(2);
    expect(codes[1]).not.toBe(code);
    expect(await storedCode(email)).toMatchObject({ code: codes[1], attempts: 0 });
    expect((await verify(email, code!)).status).toBe(401);
    expect((await verify(email, codes[1]!)).status).toBe(200);
  });

  it("sends a new code when the current one has expired", async () => {
    const email = await accountPastCooldown();
    const [code] = await mailedCodes(email);
    await setCode(email, { expires_at: Date.now() - 1 });
    expect((await resend(email)).status).toBe(200);
    const codes = await mailedCodes(email);
    expect(codes[1]).not.toBe(code);
    expect((await verify(email, codes[1]!)).status).toBe(200);
  });

  it("answers the same 200 for unknown and verified accounts and mails nothing", async () => {
    const unknown = randomEmail();
    expect(await textOf(await resend(unknown))).toEqual({ status: 200, type: TEXT, body: AuthMessage.resendAccepted });
    expect(await mailsTo(unknown)).toEqual([]);

    const verified = await verifiedAccount();
    expect(await textOf(await resend(verified))).toEqual({ status: 200, type: TEXT, body: AuthMessage.resendAccepted });
    expect(await mailsTo(verified)).toHaveLength(1); // the registration mail only
  });

  it("answers 429 with Retry-After within 60 seconds of the last mail, registration included", async () => {
    const email = randomEmail();
    await register(email);
    const response = await resend(email);
    expect(await textOf(response)).toEqual({ status: 429, type: TEXT, body: AuthMessage.mailThrottled });
    const retryAfter = Number(response.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(55);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await mailsTo(email)).toHaveLength(1);
  });

  it("sends at most 5 mails per hour, and more once the hour has passed", async () => {
    const email = randomEmail();
    await register(email);
    for (let mail = 2; mail <= 5; mail++) {
      await setUser(email, { lastMailAt: Date.now() - MINUTE });
      expect((await resend(email)).status).toBe(200);
    }
    expect(await mailsTo(email)).toHaveLength(5);
    expect((await storedUser(email))!.mailsInWindow).toBe(5);

    await setUser(email, { lastMailAt: Date.now() - MINUTE });
    const capped = await resend(email);
    expect(await textOf(capped)).toEqual({ status: 429, type: TEXT, body: AuthMessage.mailThrottled });
    expect(Number(capped.headers.get("retry-after"))).toBeGreaterThan(60);
    expect(await mailsTo(email)).toHaveLength(5);

    await setUser(email, { mailWindowStart: Date.now() - HOUR });
    expect((await resend(email)).status).toBe(200);
    expect(await mailsTo(email)).toHaveLength(6);
    expect((await storedUser(email))!.mailsInWindow).toBe(1);
  });

  it("sends one mail for concurrent resends", async () => {
    const email = await accountPastCooldown();
    const statuses = (await Promise.all(Array.from({ length: 4 }, () => resend(email)))).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 429, 429, 429]);
    expect(await mailsTo(email)).toHaveLength(2);
  });

  it.each([
    [{}, "Email is required."],
    [{ email: "  " }, "Email is required."],
    [{ email: 7 }, "Email must be a string."],
  ])("returns 400 plain text for %j", async (body, message) => {
    expect(await textOf(await call("POST", "/auth/resend-verification", body))).toEqual({
      status: 400,
      type: TEXT,
      body: message,
    });
  });

  it("returns 405 for GET", async () => {
    expect(await textOf(await call("GET", "/auth/resend-verification"))).toEqual({
      status: 405,
      type: TEXT,
      body: Contract.methodNotAllowed,
    });
  });
});

describe("failed verifications across codes", () => {
  it("answers 429 for every verify of the account after 15 tries in an hour, new codes notwithstanding", async () => {
    const email = randomEmail();
    await register(email);
    for (let round = 0; round < 3; round++) {
      const code = (await storedCode(email))!.code;
      for (let i = 0; i < 5; i++) expect((await verify(email, otherCode(code))).status).toBe(401);
      await setUser(email, { lastMailAt: Date.now() - MINUTE });
      expect((await resend(email)).status).toBe(200);
    }
    expect((await storedCode(email))!.window_attempts).toBe(15);

    const code = (await storedCode(email))!.code;
    const blocked = await verify(email, code);
    expect(await textOf(blocked)).toEqual({
      status: 429,
      type: TEXT,
      body: "Too many failed verification attempts. Please try again later.",
    });
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(HOUR / 1000 - 120);
    expect((await storedUser(email))!.isVerified).toBe(0);

    // An hour after the first failure the window starts afresh.
    await setCode(email, { window_start: Date.now() - HOUR });
    expect((await verify(email, code)).status).toBe(200);
  });

  it("refuses tries at a voided code without comparing or counting them", async () => {
    const email = randomEmail();
    await register(email);
    const code = (await storedCode(email))!.code;
    for (let i = 0; i < 7; i++) {
      expect(await textOf(await verify(email, otherCode(code)))).toEqual({
        status: 401,
        type: TEXT,
        body: Contract.invalidToken,
      });
    }
    expect(await storedCode(email)).toMatchObject({ attempts: 5, window_attempts: 5 });
  });
});

describe("verification codes under bursts", () => {
  it("compares a code at most five times however a resend interleaves with wrong guesses", async () => {
    for (let round = 0; round < 8; round++) {
      const email = randomEmail();
      await register(email);
      const code = await mailedCode(email);
      await setUser(email, { lastMailAt: Date.now() - MINUTE });

      const responses = await Promise.all([
        ...Array.from({ length: 12 }, () => verify(email, otherCode(code))),
        call("POST", "/auth/resend-verification", { email }),
      ]);
      expect(responses.slice(0, 12).every((response) => response.status === 401)).toBe(true);

      // Whatever the order, the first code has had five tries at most and is void now: a resend
      // may have re-sent it, but never with fewer tries than it had.
      const stored = await storedCode(email);
      if (stored!.code === code) expect(stored!.attempts).toBe(5);
      expect(await textOf(await verify(email, code))).toEqual({ status: 401, type: TEXT, body: Contract.invalidToken });
    }
  });

  it("enforces the hourly cap in the write that counts the try: a burst gets exactly the room left", async () => {
    const email = randomEmail();
    await register(email);
    const code = await mailedCode(email);
    // Thirteen tries already this hour (earlier codes), and a fresh code.
    await setCode(email, { window_start: Date.now() - MINUTE, window_attempts: 13 });

    const responses = await Promise.all(Array.from({ length: 40 }, () => verify(email, otherCode(code))));
    expect(tally(responses)).toEqual({ 401: 2, 429: 38 });
    expect(await storedCode(email)).toMatchObject({ attempts: 2, window_attempts: 15 });
    expect((await verify(email, code)).status).toBe(429);
  });

  it("gives one of 40 concurrent right codes the verification and the rest 401", async () => {
    const email = randomEmail();
    await register(email);
    const code = await mailedCode(email);
    const responses = await Promise.all(Array.from({ length: 40 }, () => verify(email, code)));
    // Five tries are claimed, one of them uses the code up; the others find it gone.
    expect(tally(responses)).toEqual({ 200: 1, 401: 39 });
    expect(await storedCode(email)).toBeNull();
  });
});
