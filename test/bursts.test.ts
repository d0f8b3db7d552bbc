import { env } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { describe, expect, it } from "vitest";
import { claimLogin, releaseLogin } from "../src/auth/limits";
import {
  call,
  callWithEnv,
  login,
  mailedCode,
  otherCode,
  PASSWORD,
  randomEmail,
  register,
  setCode,
  setUser,
  storedCode,
  tally,
  TEXT,
  textOf,
  verifiedAccount,
  verify,
} from "./helpers";

/**
 * The per-account limits under concurrent bursts, as an attacker sends them: every request of a burst
 * is launched before any answer is read. Each limit must be decided by one atomic write, so the counts
 * below are exact, not "roughly".
 */

const MINUTE = 60_000;
const LOCKED = "Too many failed login attempts. Please try again later.";
const INVALID_CREDENTIALS = "Invalid email or password.";
const INVALID_TOKEN = "Invalid or expired verification token.";

async function loginRow(email: string) {
  return env.DB.prepare("SELECT failures, lockedUntil FROM login_failures WHERE email = ?")
    .bind(email)
    .first<{ failures: number; lockedUntil: number }>();
}

describe("login lock under a burst", () => {
  it("checks at most 10 passwords of 40 wrong ones and the right one sent together, and refuses the right one", async () => {
    const email = await verifiedAccount();
    const burst = [...Array.from({ length: 40 }, () => login(email, "wrong password")), login(email, PASSWORD)];
    const responses = await Promise.all(burst);

    // Exactly ten attempts were claimed and checked; every other one was refused before bcrypt.
    expect(tally(responses)).toEqual({ 401: 10, 429: 31 });
    const right = responses.at(-1)!;
    expect(await textOf(right)).toEqual({ status: 429, type: TEXT, body: LOCKED });
    expect(Number(right.headers.get("retry-after"))).toBeGreaterThan(14 * 60);
    const row = await loginRow(email);
    expect(row!.failures).toBe(10);
    expect(row!.lockedUntil).toBeGreaterThan(Date.now() + 14 * MINUTE);

    // The lock holds afterwards too, for the right password.
    expect(await textOf(await login(email, PASSWORD))).toEqual({ status: 429, type: TEXT, body: LOCKED });
  });

  it("holds with the per-client limiter on as well", async () => {
    const email = await verifiedAccount();
    const send = (password: string) =>
      callWithEnv({ RATE_LIMITS: "on" }, "POST", "/auth/login", { email, password }, { "CF-Connecting-IP": `198.51.100.${Math.floor(Math.random() * 250)}` });
    const responses = await Promise.all([...Array.from({ length: 28 }, () => send("wrong password")), send(PASSWORD)]);
    expect(tally(responses)).toEqual({ 401: 10, 429: 19 });
    expect(responses.at(-1)!.status).toBe(429);
  });

  it("counts an unknown address the same way", async () => {
    const unknown = randomEmail();
    const responses = await Promise.all(Array.from({ length: 40 }, () => login(unknown, "wrong password")));
    expect(tally(responses)).toEqual({ 401: 10, 429: 30 });
  });

  it("lets the right password through as the tenth attempt, and that success lifts the lock it set", async () => {
    const email = await verifiedAccount();
    for (let i = 0; i < 9; i++) expect((await login(email, "wrong password")).status).toBe(401);
    expect((await login(email, PASSWORD)).status).toBe(200);
    expect(await loginRow(email)).toBeNull();
  });

  it("never lets a success delete a lock set after its own claim", async () => {
    const email = randomEmail();
    const db = drizzle(env.DB);
    const now = Date.now();
    // A login claims its attempt (no lock yet) and goes off to check the password...
    const [mine] = await claimLogin(db, email, now);
    expect(mine).toEqual({ failures: 1, lockedUntil: 0 });
    // ...while nine concurrent attempts claim theirs; the last of them locks the address.
    for (let i = 0; i < 9; i++) await claimLogin(db, email, now);
    const locked = await loginRow(email);
    expect(locked!.lockedUntil).toBe(now + 15 * MINUTE);
    // The first login's password was right: its release must leave the newer lock in place.
    await releaseLogin(db, email, mine!.lockedUntil);
    expect(await loginRow(email)).toEqual(locked);
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
      expect(await textOf(await verify(email, code))).toEqual({ status: 401, type: TEXT, body: INVALID_TOKEN });
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

describe("login input", () => {
  it.each([
    ["an implausible address", "not-an-email"],
    ["an address of 16,000 characters", `${"a".repeat(16_000)}@example.com`],
    ["an address with a zero-width space", "ad\u200Bmin@example.com"],
  ])("answers 400 for %s and stores nothing for it", async (_case, email) => {
    const response = await login(email, "wrong password");
    expect(await textOf(response)).toEqual({ status: 400, type: TEXT, body: "Please provide a valid email address." });
    expect(await env.DB.prepare("SELECT count(*) AS n FROM login_failures WHERE email = ?").bind(email.toLowerCase()).first("n")).toBe(0);
  });

  it("still answers 401 for a plausible unknown address", async () => {
    expect(await textOf(await login(randomEmail(), "wrong password"))).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
  });
});

describe("Unicode in addresses and passwords", () => {
  const nfc = (tag: string) => `caf\u00E9-${tag}@example.com`;
  const nfd = (tag: string) => `cafe\u0301-${tag}@example.com`;

  it("treats the NFC and NFD spellings of an address as one account", async () => {
    const tag = crypto.randomUUID();
    expect((await register(nfd(tag))).status).toBe(201);
    expect(await textOf(await register(nfc(tag)))).toEqual({ status: 409, type: TEXT, body: "User with this email already exists." });
    const stored = await env.DB.prepare("SELECT email FROM users WHERE email = ?").bind(nfc(tag)).first("email");
    expect(stored).toBe(nfc(tag));
  });

  it.each([
    ["a zero-width joiner", "a\u200Db@example.com"],
    ["a right-to-left override", "\u202Eadmin@example.com"],
    ["a soft hyphen", "ad\u00ADmin@example.com"],
    ["a private-use character", "a\uE000b@example.com"],
  ])("refuses an address with %s", async (_case, email) => {
    expect(await textOf(await register(email))).toEqual({ status: 400, type: TEXT, body: "Please provide a valid email address." });
  });

  it("accepts a password typed in another Unicode form (NFKC): composed or not, full-width or not", async () => {
    const email = randomEmail();
    const typed = "p\u00E4ssw\uFF4Frd \uFF11\uFF12"; // "pässwｏrd １２": precomposed ä, full-width o and digits
    expect((await register(email, typed)).status).toBe(201);
    expect((await verify(email, await mailedCode(email))).status).toBe(200);
    expect((await login(email, "pa\u0308ssword 12")).status).toBe(200);
    expect((await login(email, typed)).status).toBe(200);
  });

  it("still lets in an account whose hash was made from the password as typed, before normalization", async () => {
    const email = await verifiedAccount();
    const typed = "cafe\u0301 password"; // NFD: differs from its NFKC form
    const bcrypt = await import("bcryptjs");
    await setUser(email, { password: bcrypt.hashSync(typed, 4) });
    expect((await login(email, typed)).status).toBe(200);
  });
});
