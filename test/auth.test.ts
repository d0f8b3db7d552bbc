import bcrypt from "bcryptjs";
import { env } from "cloudflare:workers";
import { decodeJwt, decodeProtectedHeader, jwtVerify } from "jose";
import PostalMime from "postal-mime";
import { describe, expect, it } from "vitest";
import {
  call,
  login,
  mailedCode,
  mailsTo,
  otherCode,
  PASSWORD,
  randomEmail,
  register,
  setCode,
  storedCode,
  storedUser,
  TEXT,
  textOf,
  verifiedAccount,
  verify,
} from "./helpers";

const CREATED = "User created. Please check your email for a verification code.";
const INVALID_TOKEN = "Invalid or expired verification token.";
const INVALID_CREDENTIALS = "Invalid email or password.";

describe("POST /auth/register", () => {
  it("creates an unverified user with a bcrypt hash and a code valid for 15 minutes", async () => {
    const email = randomEmail();
    const before = Date.now();
    expect(await textOf(await register(email))).toEqual({ status: 201, type: TEXT, body: CREATED });

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
    expect(parsed.subject).toBe("Verify Your Email Address");
    const code = (await storedCode(email))!.code;
    expect(parsed.text?.trim()).toBe(`Your verification code is: ${code}`);
  });

  it("returns 409 when the e-mail is taken, in any letter case, and keeps the first account", async () => {
    const email = randomEmail();
    await register(email);
    const first = await storedUser(email);
    const again = await register(`  ${email.toUpperCase()} `, "another password");
    expect(await textOf(again)).toEqual({ status: 409, type: TEXT, body: "User with this email already exists." });
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
    ["an e-mail without a dot in the domain", { email: "a@localhost", password: PASSWORD }, "Please provide a valid email address."],
    ["an e-mail with a line break", { email: "a@example.com\r\nRCPT TO:<x@y.z>", password: PASSWORD }, "Please provide a valid email address."],
    ["an e-mail with angle brackets", { email: "a>@example.com", password: PASSWORD }, "Please provide a valid email address."],
    ["a lone UTF-16 surrogate in the password", '{"email":"a@example.com","password":"abcdefgh\\ud800"}', "Request body must not contain unpaired UTF-16 surrogates."],
    ["a 7-character password", { email: "a@example.com", password: "1234567" }, "Password must be at least 8 characters long."],
    ["a password over 72 bytes", { email: "a@example.com", password: "é".repeat(37) }, "Password must be at most 72 bytes long (UTF-8)."],
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
    expect(await textOf(response)).toEqual({ status: 200, type: TEXT, body: "Email verified successfully." });
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
    expect(await textOf(response)).toEqual({ status: 400, type: TEXT, body: "Email and token are required." });
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
    expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: INVALID_TOKEN });
  });

  it("returns 401 for a wrong code and leaves the account unverified", async () => {
    const email = randomEmail();
    await register(email);
    const code = await mailedCode(email);
    expect(await textOf(await verify(email, otherCode(code)))).toEqual({ status: 401, type: TEXT, body: INVALID_TOKEN });
    expect(await storedUser(email)).toMatchObject({ isVerified: 0 });
    expect(await storedCode(email)).toMatchObject({ code, attempts: 1 });
  });

  it("returns 401 for an expired code, even the right one", async () => {
    const email = randomEmail();
    await register(email);
    const code = await mailedCode(email);
    await setCode(email, { expires_at: Date.now() - 1 });
    expect(await textOf(await verify(email, code))).toEqual({ status: 401, type: TEXT, body: INVALID_TOKEN });
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
    expect(await textOf(await verify(email, code))).toEqual({ status: 401, type: TEXT, body: INVALID_TOKEN });
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
    expect(await textOf(await verify(email, "123456"))).toEqual({ status: 401, type: TEXT, body: INVALID_TOKEN });
  });
});

describe("POST /auth/login", () => {
  it("returns an HS256 JWT with the user id as a string, expiring one hour after issue, and a refresh token", async () => {
    const email = await verifiedAccount();
    const response = await login(email, PASSWORD);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    const body = (await response.json()) as { token: string; refresh_token: string; expires_in: number; device_token: string };
    expect(Object.keys(body)).toEqual(["token", "refresh_token", "expires_in", "device_token"]);
    expect(body.expires_in).toBe(3600);

    const { payload, protectedHeader } = await jwtVerify(body.token, new TextEncoder().encode(env.JWT_SECRET_KEY), {
      algorithms: ["HS256"],
    });
    expect(protectedHeader.alg).toBe("HS256");
    expect(payload.id).toBe(String((await storedUser(email))!.id));
    expect(payload.sid).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(payload.exp! - payload.iat!).toBe(3600);
    expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(60);
  });

  it("matches the e-mail in any letter case", async () => {
    const email = await verifiedAccount();
    expect((await login(` ${email.toUpperCase()} `, PASSWORD)).status).toBe(200);
  });

  it("returns 401 for an unknown e-mail", async () => {
    expect(await textOf(await login(randomEmail(), PASSWORD))).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
  });

  it("returns 401 for a wrong password", async () => {
    const email = await verifiedAccount();
    expect(await textOf(await login(email, "wrong password"))).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
  });

  it("returns 401, not 403, for an unverified account with a wrong password", async () => {
    const email = randomEmail();
    await register(email);
    expect(await textOf(await login(email, "wrong password"))).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
  });

  it("returns 403 for an unverified account with the right password", async () => {
    const email = randomEmail();
    await register(email);
    expect(await textOf(await login(email, PASSWORD))).toEqual({
      status: 403,
      type: TEXT,
      body: "Email not verified. Please check your inbox.",
    });
  });

  it("refuses a password whose first 72 bytes match but that goes on", async () => {
    const password = "x".repeat(72);
    const email = await verifiedAccount(password);
    expect((await login(email, password)).status).toBe(200);
    expect(await textOf(await login(email, `${password}tail`))).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
  });

  it.each([
    ["malformed JSON", "nope", "Request body must be valid JSON."],
    ["a JSON array", "[1]", "Request body must be a JSON object."],
    ["no password", { email: "a@example.com" }, "Email and password are required."],
    ["an object as e-mail", { email: {}, password: PASSWORD }, "Email and password must be strings."],
  ])("returns 400 plain text for %s", async (_case, body, message) => {
    expect(await textOf(await call("POST", "/auth/login", body))).toEqual({ status: 400, type: TEXT, body: message });
  });

  it("signs a token that another secret does not verify", async () => {
    const email = await verifiedAccount();
    const { token } = (await (await login(email, PASSWORD)).json()) as { token: string };
    expect(decodeProtectedHeader(token).alg).toBe("HS256");
    expect(decodeJwt(token).id).toBe(String((await storedUser(email))!.id));
    await expect(jwtVerify(token, new TextEncoder().encode("another secret"))).rejects.toThrow();
  });
});

describe("wrong methods and unknown paths in the accounts area", () => {
  it.each([
    ["GET", "/auth/register", "POST"],
    ["GET", "/auth/verify-email", "POST"],
    ["GET", "/auth/login", "POST"],
    ["GET", "/auth/refresh", "POST"],
    ["GET", "/auth/logout", "POST"],
    ["PATCH", "/auth/sessions", "GET, DELETE"],
    ["GET", "/auth/sessions/abc", "DELETE"],
    ["POST", "/auth/me", "GET"],
    ["GET", "/auth/forgot-password", "POST"],
    ["PUT", "/auth/reset-password", "POST"],
    ["GET", "/auth/change-password", "POST"],
    ["DELETE", "/auth/change-email", "POST"],
    ["PATCH", "/auth/confirm-email-change", "POST"],
    ["GET", "/auth/account", "DELETE"],
    ["POST", "/auth/account", "DELETE"],
  ])("returns 405 with Allow for %s %s", async (method, path, allow) => {
    const response = await call(method, path);
    expect(await textOf(response)).toEqual({ status: 405, type: TEXT, body: "Method not allowed" });
    expect(response.headers.get("allow")).toBe(allow);
  });

  it("returns 404 plain text for an unknown /auth path", async () => {
    expect(await textOf(await call("POST", "/auth/no-such-thing", {}))).toEqual({ status: 404, type: TEXT, body: "Not found." });
  });
});
