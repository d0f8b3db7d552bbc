import { env } from "cloudflare:workers";
import PostalMime from "postal-mime";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  call,
  callWithEnv,
  captureLogs,
  JSON_TYPE,
  jsonOf,
  login,
  mailsTo,
  otherCode,
  PASSWORD,
  randomEmail,
  register,
  setCode,
  setUser,
  storedCode,
  storedUser,
  TEXT,
  textOf,
  verifiedAccount,
  verify,
} from "./helpers";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const RESENT = "If this email belongs to an unverified account, a verification code has been sent.";
const MAIL_THROTTLED = "Please wait before requesting another verification code.";
const INVALID_TOKEN = "Invalid or expired verification token.";

afterEach(() => {
  vi.restoreAllMocks();
});

function resend(email: string) {
  return call("POST", "/auth/resend-verification", { email });
}

/** The codes in every verification mail sent to `email`, oldest first. */
async function mailedCodes(email: string): Promise<string[]> {
  const codes: string[] = [];
  for (const mail of await mailsTo(email)) {
    const text = (await PostalMime.parse(mail.raw)).text ?? "";
    codes.push(/Your verification code is: (\d{6})/.exec(text)![1]!);
  }
  return codes;
}

/** Registers an account and moves its last mail back past the 60-second cooldown. */
async function accountPastCooldown(): Promise<string> {
  const email = randomEmail();
  await register(email);
  await setUser(email, { lastMailAt: Date.now() - MINUTE });
  return email;
}

describe("POST /auth/resend-verification", () => {
  it("re-sends the current code and restarts its 15 minutes, without touching its attempt count", async () => {
    const email = await accountPastCooldown();
    const [code] = await mailedCodes(email);
    await verify(email, otherCode(code!));
    await setCode(email, { expires_at: Date.now() + MINUTE });
    await setUser(email, { lastMailAt: Date.now() - MINUTE });

    const before = Date.now();
    expect(await textOf(await resend(email))).toEqual({ status: 200, type: TEXT, body: RESENT });
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
    expect(await textOf(await resend(unknown))).toEqual({ status: 200, type: TEXT, body: RESENT });
    expect(await mailsTo(unknown)).toEqual([]);

    const verified = await verifiedAccount();
    expect(await textOf(await resend(verified))).toEqual({ status: 200, type: TEXT, body: RESENT });
    expect(await mailsTo(verified)).toHaveLength(1); // the registration mail only
  });

  it("answers 429 with Retry-After within 60 seconds of the last mail, registration included", async () => {
    const email = randomEmail();
    await register(email);
    const response = await resend(email);
    expect(await textOf(response)).toEqual({ status: 429, type: TEXT, body: MAIL_THROTTLED });
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
    expect(await textOf(capped)).toEqual({ status: 429, type: TEXT, body: MAIL_THROTTLED });
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
    expect(await textOf(await call("POST", "/auth/resend-verification", body))).toEqual({ status: 400, type: TEXT, body: message });
  });

  it("returns 405 for GET", async () => {
    expect(await textOf(await call("GET", "/auth/resend-verification"))).toEqual({ status: 405, type: TEXT, body: "Method not allowed" });
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
      expect(await textOf(await verify(email, otherCode(code)))).toEqual({ status: 401, type: TEXT, body: INVALID_TOKEN });
    }
    expect(await storedCode(email)).toMatchObject({ attempts: 5, window_attempts: 5 });
  });
});

describe("login lock", () => {
  const LOCKED = "Too many failed login attempts. Please try again later.";

  it("locks an account for 15 minutes after 10 failed logins, even for the right password", async () => {
    const email = await verifiedAccount();
    for (let i = 0; i < 10; i++) expect((await login(email, "wrong password")).status).toBe(401);
    const locked = await login(email, PASSWORD);
    expect(await textOf(locked)).toEqual({ status: 429, type: TEXT, body: LOCKED });
    const retryAfter = Number(locked.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(14 * 60);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);

    await env.DB.prepare("UPDATE login_failures SET lockedUntil = ? WHERE email = ?").bind(Date.now() - 1, email).run();
    expect((await login(email, PASSWORD)).status).toBe(200);
    expect(await env.DB.prepare("SELECT * FROM login_failures WHERE email = ?").bind(email).first()).toBeNull();
  });

  it("resets the count on a successful login", async () => {
    const email = await verifiedAccount();
    for (let i = 0; i < 9; i++) await login(email, "wrong password");
    expect((await login(email, PASSWORD)).status).toBe(200);
    for (let i = 0; i < 9; i++) await login(email, "wrong password");
    expect((await login(email, "wrong password")).status).toBe(401);
    expect((await login(email, PASSWORD)).status).toBe(429);
  });

  it("answers an unknown address exactly like a registered one", async () => {
    const unknown = randomEmail();
    for (let i = 0; i < 10; i++) {
      expect(await textOf(await login(unknown, "wrong password"))).toEqual({ status: 401, type: TEXT, body: "Invalid email or password." });
    }
    const locked = await login(unknown, PASSWORD);
    expect(await textOf(locked)).toEqual({ status: 429, type: TEXT, body: LOCKED });
    expect(locked.headers.get("retry-after")).not.toBeNull();
  });
});

describe("per-client rate limit", () => {
  const limited = { RATE_LIMITS: "on" };
  const client = () => ({ "CF-Connecting-IP": `198.51.100.${Math.floor(Math.random() * 250)}-${crypto.randomUUID()}` });

  it("answers 429 plain text with Retry-After after 30 POSTs to /auth in a minute, per client", async () => {
    const ip = client();
    for (let i = 0; i < 30; i++) {
      expect((await callWithEnv(limited, "POST", "/auth/login", {}, ip)).status).toBe(400);
    }
    const over = await callWithEnv(limited, "POST", "/auth/login", {}, ip);
    expect(await textOf(over)).toEqual({ status: 429, type: TEXT, body: "Too many requests. Please slow down." });
    expect(over.headers.get("retry-after")).toBe("60");
    // Another client is not affected.
    expect((await callWithEnv(limited, "POST", "/auth/login", {}, client())).status).toBe(400);
  });

  it("answers 429 JSON after 300 note writes in a minute, and leaves reads alone", async () => {
    const ip = client();
    for (let i = 0; i < 300; i++) {
      expect((await callWithEnv(limited, "POST", "/notes", "{", ip)).status).toBe(400);
    }
    const over = await callWithEnv(limited, "POST", "/notes", { title: "t", content: "c" }, ip);
    expect(over.status).toBe(429);
    expect(over.headers.get("content-type")).toBe(JSON_TYPE);
    expect(over.headers.get("retry-after")).toBe("60");
    expect(await over.json()).toEqual({ error: "Too many requests" });
    expect((await callWithEnv(limited, "GET", "/notes/1", undefined, ip)).status).not.toBe(429);
  });

  it("is off with RATE_LIMITS=off", async () => {
    const ip = client();
    for (let i = 0; i < 40; i++) {
      expect((await callWithEnv({ RATE_LIMITS: "off" }, "POST", "/auth/login", {}, ip)).status).toBe(400);
    }
  });
});

describe("request size limits", () => {
  it("refuses an accounts body over 16 KiB with 413 plain text", async () => {
    const body = JSON.stringify({ email: randomEmail(), password: "x".repeat(17 * 1024) });
    expect(await textOf(await call("POST", "/auth/register", body))).toEqual({
      status: 413,
      type: TEXT,
      body: "Request body is too large (limit 16 KiB).",
    });
  });

  it("refuses a note body over 1 MiB with 413 JSON and accepts one just under", async () => {
    const tooBig = await call("POST", "/notes", { title: "big", content: "x".repeat(1024 * 1024) });
    expect(tooBig.status).toBe(413);
    expect(tooBig.headers.get("content-type")).toBe(JSON_TYPE);
    expect(await tooBig.json()).toEqual({ error: "Request body is too large (limit 1 MiB)" });

    const content = "y".repeat(1000 * 1024);
    const fits = await call("POST", "/notes", { title: "large", content });
    expect(fits.status).toBe(201);
    const { id } = (await fits.json()) as { id: number };
    expect(((await call("PATCH", `/notes/${id}`, { content: `${content}z`.repeat(2) })).status)).toBe(413);
    const stored = await env.DB.prepare("SELECT length(content) AS n FROM notes WHERE id = ?").bind(id).first<{ n: number }>();
    expect(stored!.n).toBe(content.length);
  });
});

describe("deeply nested JSON bodies", () => {
  const LONE_SURROGATE = "Request body must not contain unpaired UTF-16 surrogates.";
  const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

  // 3,500 levels were enough to overflow the stack of a recursive check (a 500).
  it("answers 400 plain text on /auth/register for 3,500 levels and a lone surrogate", async () => {
    const email = randomEmail();
    const body = `{"email":"${email}","password":"${PASSWORD}","x":${nested(3_500)},"y":"\\ud800"}`;
    expect(await textOf(await call("POST", "/auth/register", body))).toEqual({ status: 400, type: TEXT, body: LONE_SURROGATE });
    expect(await storedUser(email)).toBeNull();
  });

  it("answers 400 JSON on POST /notes for 3,500 levels and a lone surrogate", async () => {
    const body = `{"title":"t","content":"c","x":${nested(3_500)},"y":"\\ud800"}`;
    expect(await jsonOf(await call("POST", "/notes", body))).toEqual({ status: 400, type: JSON_TYPE, body: { error: LONE_SURROGATE } });
  });

  it("registers with a deeply nested unknown field, which is ignored, and an escaped surrogate pair", async () => {
    const email = randomEmail();
    // 7,000 levels fill most of the 16 KiB; "\ud83d\ude00" is one emoji, written as a pair of escapes.
    const body = `{"email":"${email}","password":"${PASSWORD} \\ud83d\\ude00","x":${nested(7_000)}}`;
    expect((await call("POST", "/auth/register", body)).status).toBe(201);
    expect(await storedUser(email)).not.toBeNull();
  });

  it("creates a note with a deeply nested unknown field, an escaped pair and an escaped backslash before \"ud800\"", async () => {
    // `\\ud800` is a backslash followed by the letters "ud800": no surrogate at all.
    const body = `{"title":"C:\\\\ud800 \\ud83d\\ude00","content":"c","x":${nested(200_000)}}`;
    const response = await jsonOf(await call("POST", "/notes", body));
    expect(response).toMatchObject({ status: 201, type: JSON_TYPE, body: { title: "C:\\ud800 \u{1F600}", content: "c" } });
    expect(Object.keys(response.body as object).sort()).toEqual(["content", "created_at", "id", "title"]);
  });
});

describe("request bodies that are not UTF-8", () => {
  const NOT_UTF8 = "Request body must be valid UTF-8.";
  const utf8 = (text: string) => new TextEncoder().encode(text);
  /** Raw bytes between two pieces of JSON text. */
  const withBytes = (before: string, bytes: number[], after: string) => new Uint8Array([...utf8(before), ...bytes, ...utf8(after)]);

  it.each([
    ["0xC3 0x28 (a lead byte without its continuation)", [0xc3, 0x28]],
    ["a lone 0xFF", [0xff]],
    ["0xC0 0xAF (an overlong '/')", [0xc0, 0xaf]],
    ["0xED 0xA0 0x80 (a surrogate encoded as UTF-8)", [0xed, 0xa0, 0x80]],
  ])("answers 400 plain text on /auth/register for %s and creates no account", async (_case, bytes) => {
    const email = randomEmail();
    const body = withBytes(`{"email":"${email}","password":"${PASSWORD}`, bytes, '"}');
    expect(await textOf(await call("POST", "/auth/register", body))).toEqual({ status: 400, type: TEXT, body: NOT_UTF8 });
    expect(await storedUser(email)).toBeNull();
  });

  it.each([
    ["0xC3 0x28 (a lead byte without its continuation)", [0xc3, 0x28]],
    ["a lone 0xFF", [0xff]],
  ])("answers 400 JSON on POST and PATCH /notes for %s and stores nothing", async (_case, bytes) => {
    const marker = crypto.randomUUID();
    const created = await call("POST", "/notes", withBytes(`{"title":"${marker}`, bytes, '","content":"c"}'));
    expect(await jsonOf(created)).toEqual({ status: 400, type: JSON_TYPE, body: { error: NOT_UTF8 } });
    const stored = await env.DB.prepare("SELECT COUNT(*) AS n FROM notes WHERE title LIKE ?").bind(`${marker}%`).first<{ n: number }>();
    expect(stored!.n).toBe(0);

    const { id } = (await (await call("POST", "/notes", { title: marker, content: "before" })).json()) as { id: number };
    const patched = await call("PATCH", `/notes/${id}`, withBytes('{"content":"after', bytes, '"}'));
    expect(await jsonOf(patched)).toEqual({ status: 400, type: JSON_TYPE, body: { error: NOT_UTF8 } });
    const row = await env.DB.prepare("SELECT content FROM notes WHERE id = ?").bind(id).first<{ content: string }>();
    expect(row!.content).toBe("before");
  });
});

describe("headers on every response", () => {
  it.each([
    ["GET", "/notes"],
    ["POST", "/auth/login"],
    ["GET", "/nope"],
  ])("%s %s carries secure headers and a request id", async (method, path) => {
    const response = await call(method, path, method === "POST" ? {} : undefined);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("x-frame-options")).toBe("SAMEORIGIN");
    expect(response.headers.get("strict-transport-security")).toMatch(/max-age=\d+/);
    expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("keeps a request id the client sent", async () => {
    const response = await call("GET", "/notes", undefined, { "X-Request-Id": "client-chosen-id-1" });
    expect(response.headers.get("x-request-id")).toBe("client-chosen-id-1");
  });
});

describe("CORS", () => {
  const origins = { CORS_ORIGINS: "https://app.example.com, https://admin.example.com" };
  const preflight = (origin: string) => ({
    Origin: origin,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization, content-type",
  });

  it("answers a preflight from an allowed origin", async () => {
    const response = await callWithEnv(origins, "OPTIONS", "/notes", undefined, preflight("https://admin.example.com"));
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("https://admin.example.com");
    expect(response.headers.get("access-control-allow-headers")).toBe("Authorization,Content-Type,X-D1-Bookmark,Idempotency-Key");
    expect(response.headers.get("access-control-allow-methods")).toBe("GET,POST,PATCH,DELETE");
  });

  it("allows no other origin, and none at all by default", async () => {
    const refused = await callWithEnv(origins, "OPTIONS", "/notes", undefined, preflight("https://evil.example.com"));
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
    const byDefault = await call("OPTIONS", "/notes", undefined, preflight("https://app.example.com"));
    expect(byDefault.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("marks actual responses for an allowed origin, and leaves plain OPTIONS to the spec's 405", async () => {
    const response = await callWithEnv(origins, "GET", "/notes", undefined, { Origin: "https://app.example.com" });
    expect(response.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect((await call("OPTIONS", "/notes")).status).toBe(405);
  });
});

describe("log lines", () => {
  it("masks e-mail addresses and carries the request id, method, path, status and duration", async () => {
    const logs = captureLogs();
    const email = randomEmail();
    const response = await register(email);
    const requestId = response.headers.get("x-request-id");

    const registered = logs.find((line) => line.event === "user_registered");
    expect(registered).toMatchObject({ level: "info", requestId, method: "POST", path: "/auth/register" });
    expect(registered!.email).toBe(`u***@example.com`);
    const request = logs.find((line) => line.event === "request");
    expect(request).toMatchObject({ requestId, status: 201, method: "POST", path: "/auth/register" });
    expect(typeof request!.durationMs).toBe("number");
    expect(typeof request!.time).toBe("string");

    const all = JSON.stringify(logs);
    expect(all).not.toContain(email);
    expect(all).not.toContain(PASSWORD);
    expect(all).not.toContain((await storedCode(email))!.code);
  });

  it("warns once when JWT_SECRET_KEY is shorter than 32 bytes", async () => {
    const email = await verifiedAccount();
    const logs = captureLogs();
    const response = await callWithEnv({ JWT_SECRET_KEY: "too-short" }, "POST", "/auth/login", { email, password: PASSWORD });
    expect(response.status).toBe(200);
    expect(logs.filter((line) => line.event === "jwt_secret_short")).toHaveLength(1);
    expect(JSON.stringify(logs)).not.toContain("too-short");
  });
});
