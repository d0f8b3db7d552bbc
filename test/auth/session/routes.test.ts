import { env } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT } from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import { claimLogin, releaseLogin } from "../../../src/auth/limits/login";
import { AuthMessage } from "../../../src/auth/messages";
import { DAY, MINUTE } from "../../../src/lib/units";
import { Contract } from "../../contract";
import {
  bearer,
  postLogin,
  logIn,
  me,
  refresh,
  register,
  sessionIdOf,
  storedSession,
  type StoredSession,
  storedUser,
  type Tokens,
  verifiedAccount,
} from "../../support/accounts";
import { call, callWithEnv, JSON_TYPE, jsonOf, PASSWORD, randomEmail, tally, TEXT, textOf } from "../../support/app";

async function setSession(id: string, columns: Partial<StoredSession>): Promise<void> {
  const names = Object.keys(columns) as Array<keyof StoredSession>;
  await env.DB.prepare(`UPDATE sessions SET ${names.map((name) => `${name} = ?`).join(", ")} WHERE id = ?`)
    .bind(...names.map((name) => columns[name]), id)
    .run();
}

/** The same app with NOTES_AUTH=required. */
function privateNotes(method: string, path: string, token: string, body?: unknown): Promise<Response> {
  return callWithEnv({ NOTES_AUTH: "required" }, method, path, body, bearer(token));
}

/** A token signed with the real secret but with claims of our choosing. */
async function forged(claims: Record<string, unknown>, lifetimeSeconds: number | null = 3600): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: "HS256", typ: "JWT" }).setIssuedAt(now);
  if (lifetimeSeconds !== null) jwt.setExpirationTime(now + lifetimeSeconds);
  return jwt.sign(new TextEncoder().encode(env.JWT_SECRET_KEY));
}

/**
 * The per-account limits under concurrent bursts, as an attacker sends them: every request of a burst
 * is launched before any answer is read. Each limit must be decided by one atomic write, so the counts
 * below are exact, not "roughly".
 */

async function loginRow(email: string) {
  return env.DB.prepare("SELECT failures, lockedUntil FROM login_failures WHERE email = ?")
    .bind(email)
    .first<{ failures: number; lockedUntil: number }>();
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("POST /auth/login", () => {
  it("returns an HS256 JWT with the user id as a string, expiring one hour after issue, and a refresh token", async () => {
    const email = await verifiedAccount();
    const response = await postLogin(email, PASSWORD);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    const body = (await response.json()) as {
      token: string;
      refresh_token: string;
      expires_in: number;
      device_token: string;
    };
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
    expect((await postLogin(` ${email.toUpperCase()} `, PASSWORD)).status).toBe(200);
  });

  it("returns 401 for an unknown e-mail", async () => {
    expect(await textOf(await postLogin(randomEmail(), PASSWORD))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
  });

  it("returns 401 for a wrong password", async () => {
    const email = await verifiedAccount();
    expect(await textOf(await postLogin(email, "wrong password"))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
  });

  it("returns 401, not 403, for an unverified account with a wrong password", async () => {
    const email = randomEmail();
    await register(email);
    expect(await textOf(await postLogin(email, "wrong password"))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
  });

  it("returns 403 for an unverified account with the right password", async () => {
    const email = randomEmail();
    await register(email);
    expect(await textOf(await postLogin(email, PASSWORD))).toEqual({
      status: 403,
      type: TEXT,
      body: Contract.notVerified,
    });
  });

  it("refuses a password whose first 72 bytes match but that goes on", async () => {
    const password = "x".repeat(72);
    const email = await verifiedAccount(password);
    expect((await postLogin(email, password)).status).toBe(200);
    expect(await textOf(await postLogin(email, `${password}tail`))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
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
    const { token } = (await (await postLogin(email, PASSWORD)).json()) as { token: string };
    expect(decodeProtectedHeader(token).alg).toBe("HS256");
    expect(decodeJwt(token).id).toBe(String((await storedUser(email))!.id));
    await expect(jwtVerify(token, new TextEncoder().encode("another secret"))).rejects.toThrow();
  });
});

describe("POST /auth/login sessions", () => {
  it("creates a session with its user agent, and stores no token", async () => {
    const email = await verifiedAccount();
    const before = Date.now();
    const tokens = await logIn(email, { userAgent: "Mozilla/5.0\t(X11;   Linux)  Firefox/140.0 " });
    const session = await storedSession(sessionIdOf(tokens.token));
    expect(session).toMatchObject({
      user_id: (await storedUser(email))!.id,
      generation: 0,
      user_agent: "Mozilla/5.0 (X11; Linux) Firefox/140.0",
    });
    expect(session!.created_at).toBeGreaterThanOrEqual(before);
    expect(session!.last_used_at).toBe(session!.created_at);
    expect(session!.expires_at).toBe(session!.created_at + 30 * DAY);
    expect(JSON.stringify(session)).not.toContain(tokens.refresh_token.split(".")[2]);
    expect(tokens.refresh_token.startsWith(`${session!.id}.0.`)).toBe(true);
  });

  it("keeps at most 200 characters of a user agent", async () => {
    const tokens = await logIn(await verifiedAccount(), { userAgent: "x".repeat(5_000) });
    expect((await storedSession(sessionIdOf(tokens.token)))!.user_agent).toBe("x".repeat(200));
  });
});

describe("POST /auth/refresh", () => {
  it("accepts a refresh token in its one spelling only, not the three others its last character could take", async () => {
    const tokens = await logIn(await verifiedAccount());
    // The MAC's 43rd base64url character carries 2 bits and 4 unused ones: flipping the unused bits keeps
    // the decoded MAC, and must not keep the token.
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const last = alphabet.indexOf(tokens.refresh_token.at(-1)!);
    const others = [1, 2, 3].map(
      (bits) => tokens.refresh_token.slice(0, -1) + alphabet[(last & ~3) | ((last & 3) ^ bits)]!,
    );
    for (const other of others) {
      expect(await textOf(await refresh(other))).toEqual({
        status: 401,
        type: TEXT,
        body: AuthMessage.invalidRefreshToken,
      });
    }
    expect((await refresh(tokens.refresh_token)).status).toBe(200);
  });

  it("rotates: a new access token and a new refresh token for the same session", async () => {
    const email = await verifiedAccount();
    const first = await logIn(email);
    const response = await refresh(first.refresh_token);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    const second = (await response.json()) as Tokens;
    expect(Object.keys(second)).toEqual(["token", "refresh_token", "expires_in"]);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(decodeJwt(second.token)).toMatchObject({
      id: String((await storedUser(email))!.id),
      sid: sessionIdOf(first.token),
    });
    expect((await me(second.token)).status).toBe(200);
    expect((await storedSession(sessionIdOf(first.token)))!.generation).toBe(1);

    // The new refresh token rotates again.
    const third = (await (await refresh(second.refresh_token)).json()) as Tokens;
    expect((await storedSession(sessionIdOf(first.token)))!.generation).toBe(2);
    expect((await me(third.token)).status).toBe(200);
  });

  it("moves the idle expiry on, but never past 90 days after the login", async () => {
    const { token, refresh_token: refreshToken } = await logIn(await verifiedAccount());
    const id = sessionIdOf(token);
    const loggedIn = Date.now() - 89 * DAY;
    await setSession(id, { created_at: loggedIn });
    expect((await refresh(refreshToken)).status).toBe(200);
    expect((await storedSession(id))!.expires_at).toBe(loggedIn + 90 * DAY);
  });

  it("revokes the whole session when a replaced refresh token comes back after the grace period", async () => {
    const first = await logIn(await verifiedAccount());
    const second = (await (await refresh(first.refresh_token)).json()) as Tokens;
    const id = sessionIdOf(first.token);
    await setSession(id, { rotated_at: Date.now() - 11_000 });

    expect(await textOf(await refresh(first.refresh_token))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidRefreshToken,
    });
    expect(await storedSession(id)).toBeNull();
    // Every token of that login is dead: the thief's and the app's.
    expect(await textOf(await refresh(second.refresh_token))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidRefreshToken,
    });
    expect(await textOf(await me(second.token))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidAccessToken,
    });
    expect(await textOf(await me(first.token))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidAccessToken,
    });
  });

  it("revokes the session for a token two generations old, grace period or not", async () => {
    const first = await logIn(await verifiedAccount());
    const second = (await (await refresh(first.refresh_token)).json()) as Tokens;
    await refresh(second.refresh_token);
    expect((await refresh(first.refresh_token)).status).toBe(401);
    expect(await storedSession(sessionIdOf(first.token))).toBeNull();
  });

  it("gives a replaced token the same new refresh token within the grace period", async () => {
    const first = await logIn(await verifiedAccount());
    const a = (await (await refresh(first.refresh_token)).json()) as Tokens;
    const b = (await (await refresh(first.refresh_token)).json()) as Tokens;
    expect(b.refresh_token).toBe(a.refresh_token);
    expect((await storedSession(sessionIdOf(first.token)))!.generation).toBe(1);
    expect((await refresh(b.refresh_token)).status).toBe(200);
  });

  it.each([10, 40])("lets %i concurrent refreshes of one token all succeed, with one working token", async (count) => {
    const first = await logIn(await verifiedAccount());
    const responses = await Promise.all(Array.from({ length: count }, () => refresh(first.refresh_token)));
    expect(responses.map((response) => response.status)).toEqual(Array(count).fill(200));
    const bodies = (await Promise.all(responses.map((response) => response.json()))) as Tokens[];
    expect(new Set(bodies.map((body) => body.refresh_token)).size).toBe(1);
    expect((await storedSession(sessionIdOf(first.token)))!.generation).toBe(1);
    // Whichever answer the app kept, its tokens work.
    expect((await me(bodies.at(-1)!.token)).status).toBe(200);
    expect((await refresh(bodies[0]!.refresh_token)).status).toBe(200);
  });

  it.each([
    ["malformed", "not-a-token"],
    ["of a session that does not exist", "AAAAAAAAAAAAAAAAAAAAAA.0.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"],
  ])("answers 401 plain text for a refresh token that is %s", async (_case, token) => {
    expect(await textOf(await refresh(token))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidRefreshToken,
    });
  });

  it("answers 401 for the refresh token of an expired session", async () => {
    const { token, refresh_token: refreshToken } = await logIn(await verifiedAccount());
    await setSession(sessionIdOf(token), { expires_at: Date.now() - 1 });
    expect(await textOf(await refresh(refreshToken))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidRefreshToken,
    });
  });

  it.each([
    [{}, "Refresh token is required."],
    [{ refresh_token: "" }, "Refresh token is required."],
    [{ refresh_token: 7 }, "Refresh token must be a string."],
  ])("answers 400 plain text for %j", async (body, message) => {
    expect(await textOf(await call("POST", "/auth/refresh", body))).toEqual({ status: 400, type: TEXT, body: message });
  });

  it("is throttled per client like login", async () => {
    const send = () =>
      callWithEnv(
        { RATE_LIMITS: "on" },
        "POST",
        "/auth/refresh",
        { refresh_token: "not-a-token" },
        { "CF-Connecting-IP": "203.0.113.91" },
      );
    for (let i = 0; i < 30; i++) expect((await send()).status).toBe(401);
    const throttled = await send();
    expect(await textOf(throttled)).toEqual({ status: 429, type: TEXT, body: "Too many requests. Please slow down." });
    expect(throttled.headers.get("retry-after")).toBe("60");
  });
});

describe("POST /auth/logout", () => {
  it("ends the session: its access and refresh tokens are refused at once, on /notes too", async () => {
    const email = await verifiedAccount();
    const { token, refresh_token: refreshToken } = await logIn(email);
    expect((await privateNotes("POST", "/notes", token, { title: "t", content: "c" })).status).toBe(201);

    const response = await call("POST", "/auth/logout", undefined, bearer(token));
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    expect(await storedSession(sessionIdOf(token))).toBeNull();

    expect(await textOf(await me(token))).toEqual({ status: 401, type: TEXT, body: AuthMessage.invalidAccessToken });
    expect(await textOf(await refresh(refreshToken))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidRefreshToken,
    });
    for (const [method, path, body] of [
      ["GET", "/notes"],
      ["POST", "/notes", { title: "after logout", content: "c" }],
    ] as const) {
      const refused = await privateNotes(method, path, token, body);
      expect(await jsonOf(refused)).toEqual({ status: 401, type: JSON_TYPE, body: { error: "Unauthorized" } });
      expect(refused.headers.get("www-authenticate")).toBe("Bearer");
    }
    const stored = await env.DB.prepare("SELECT count(*) AS n FROM notes WHERE title = 'after logout'").first("n");
    expect(stored).toBe(0);
    // Logging out twice is a 401: the token is dead.
    expect((await call("POST", "/auth/logout", undefined, bearer(token))).status).toBe(401);
  });

  it("answers 401 with WWW-Authenticate without a token", async () => {
    const response = await call("POST", "/auth/logout");
    expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: AuthMessage.invalidAccessToken });
    expect(response.headers.get("www-authenticate")).toBe("Bearer");
  });
});

describe("GET /auth/sessions", () => {
  it("lists the caller's live sessions, newest use first, marking the current one", async () => {
    const email = await verifiedAccount();
    const phone = await logIn(email, { userAgent: "Phone/1.0" });
    const laptop = await logIn(email, { userAgent: "Laptop/2.0" });
    await logIn(await verifiedAccount(), { userAgent: "Someone else" });

    const response = await call("GET", "/auth/sessions", undefined, bearer(phone.token));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    const list = (await response.json()) as Array<Record<string, unknown>>;
    expect(list.map((session) => [session.user_agent, session.current])).toEqual(
      expect.arrayContaining([
        ["Phone/1.0", true],
        ["Laptop/2.0", false],
      ]),
    );
    expect(list).toHaveLength(2);
    const stored = await storedSession(sessionIdOf(laptop.token));
    expect(list.find((session) => session.id === stored!.id)).toEqual({
      id: stored!.id,
      created_at: new Date(stored!.created_at).toISOString(),
      last_used_at: new Date(stored!.last_used_at).toISOString(),
      expires_at: new Date(stored!.expires_at).toISOString(),
      user_agent: "Laptop/2.0",
      amr: ["pwd"],
      provider: null,
      current: false,
    });
  });

  it("answers 401 for a token of an ended session", async () => {
    const { token } = await logIn(await verifiedAccount());
    await call("POST", "/auth/logout", undefined, bearer(token));
    expect(await textOf(await call("GET", "/auth/sessions", undefined, bearer(token)))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidAccessToken,
    });
  });
});

describe("DELETE /auth/sessions/{id} and DELETE /auth/sessions", () => {
  it("ends one of the caller's other sessions", async () => {
    const email = await verifiedAccount();
    const phone = await logIn(email);
    const laptop = await logIn(email);
    const response = await call(
      "DELETE",
      `/auth/sessions/${sessionIdOf(laptop.token)}`,
      undefined,
      bearer(phone.token),
    );
    expect(response.status).toBe(204);
    expect((await me(laptop.token)).status).toBe(401);
    expect((await refresh(laptop.refresh_token)).status).toBe(401);
    expect((await me(phone.token)).status).toBe(200);
  });

  it("answers 404 for someone else's session and for one that does not exist, and ends neither", async () => {
    const mine = await logIn(await verifiedAccount());
    const theirs = await logIn(await verifiedAccount());
    for (const id of [sessionIdOf(theirs.token), "AAAAAAAAAAAAAAAAAAAAAA"]) {
      const response = await call("DELETE", `/auth/sessions/${id}`, undefined, bearer(mine.token));
      expect(await textOf(response)).toEqual({ status: 404, type: TEXT, body: "Session not found." });
    }
    expect((await me(theirs.token)).status).toBe(200);
  });

  it("ends every session but the current one", async () => {
    const email = await verifiedAccount();
    const sessions = [await logIn(email), await logIn(email), await logIn(email)];
    expect((await call("DELETE", "/auth/sessions", undefined, bearer(sessions[0]!.token))).status).toBe(204);
    expect((await me(sessions[0]!.token)).status).toBe(200);
    for (const other of sessions.slice(1)) {
      expect((await me(other.token)).status).toBe(401);
      expect((await refresh(other.refresh_token)).status).toBe(401);
    }
    const list = (await (
      await call("GET", "/auth/sessions", undefined, bearer(sessions[0]!.token))
    ).json()) as unknown[];
    expect(list).toHaveLength(1);
  });
});

describe("GET /auth/me", () => {
  it("answers the caller's id, e-mail, verified flag, creation time, second factor, linked providers and whether it has a password", async () => {
    const email = await verifiedAccount();
    const { token } = await logIn(email);
    const user = await storedUser(email);
    expect(await jsonOf(await me(token))).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: {
        id: user!.id,
        email,
        verified: true,
        created_at: new Date(user!.createdAt).toISOString(),
        mfa: { totp: false, recovery_codes_remaining: 0 },
        identities: [],
        has_password: true,
      },
    });
  });
});

describe("access tokens that are refused", () => {
  const sid = "AAAAAAAAAAAAAAAAAAAAAA";

  it("refuses a validly signed token for a user that does not exist: 401, never a 500", async () => {
    const token = await forged({ id: "987654321", sid });
    for (const [method, body] of [["GET"], ["POST", { title: "t", content: "c" }]] as const) {
      expect(await jsonOf(await privateNotes(method, "/notes", token, body))).toEqual({
        status: 401,
        type: JSON_TYPE,
        body: { error: "Unauthorized" },
      });
    }
    expect((await me(token)).status).toBe(401);
  });

  it("refuses a token of a real user without a session (issued before sessions existed)", async () => {
    const email = await verifiedAccount();
    const token = await forged({ id: String((await storedUser(email))!.id) });
    expect((await privateNotes("GET", "/notes", token)).status).toBe(401);
    expect((await me(token)).status).toBe(401);
  });

  it("refuses a token without exp, or living longer than an hour", async () => {
    const { token } = await logIn(await verifiedAccount());
    const claims = decodeJwt(token);
    for (const bad of [
      await forged({ id: claims.id, sid: claims.sid }, null),
      await forged({ id: claims.id, sid: claims.sid }, 7200),
    ]) {
      expect((await privateNotes("GET", "/notes", bad)).status).toBe(401);
      expect((await me(bad)).status).toBe(401);
    }
    // The same claims with the proper lifetime pass: the refusals above are about the lifetime.
    expect((await me(await forged({ id: claims.id, sid: claims.sid }))).status).toBe(200);
  });

  it.each(["0x1", "1e0", " 1", "01", "1.0", "-1"])("refuses an id claim of %j", async (id) => {
    const email = await verifiedAccount();
    const { token } = await logIn(email);
    expect(String((await storedUser(email))!.id)).not.toBe(id);
    const bad = await forged({ id, sid: decodeJwt(token).sid });
    expect((await privateNotes("GET", "/notes", bad)).status).toBe(401);
    expect((await me(bad)).status).toBe(401);
  });
});

describe("login lock under a burst", () => {
  it("checks at most 10 of 40 wrong passwords sent together, then refuses the right one", async () => {
    const email = await verifiedAccount();
    const responses = await Promise.all(Array.from({ length: 40 }, () => postLogin(email, "wrong password")));

    // Exactly ten attempts were claimed and checked; every other one was refused before bcrypt.
    expect(tally(responses)).toEqual({ 401: 10, 429: 30 });
    const row = await loginRow(email);
    expect(row!.failures).toBe(10);
    expect(row!.lockedUntil).toBeGreaterThan(Date.now() + 14 * MINUTE);

    // The lock holds for the right password too.
    const right = await postLogin(email, PASSWORD);
    expect(await textOf(right)).toEqual({ status: 429, type: TEXT, body: AuthMessage.loginLocked });
    expect(Number(right.headers.get("retry-after"))).toBeGreaterThan(14 * 60);
  });

  it("holds with the per-client limiter on as well", async () => {
    const email = await verifiedAccount();
    const send = (password: string) =>
      callWithEnv(
        { RATE_LIMITS: "on" },
        "POST",
        "/auth/login",
        { email, password },
        { "CF-Connecting-IP": `198.51.100.${Math.floor(Math.random() * 250)}` },
      );
    const responses = await Promise.all(Array.from({ length: 28 }, () => send("wrong password")));
    expect(tally(responses)).toEqual({ 401: 10, 429: 18 });
    expect((await send(PASSWORD)).status).toBe(429);
  });

  it("counts an unknown address the same way", async () => {
    const unknown = randomEmail();
    const responses = await Promise.all(Array.from({ length: 40 }, () => postLogin(unknown, "wrong password")));
    expect(tally(responses)).toEqual({ 401: 10, 429: 30 });
  });

  it("lets the right password through as the tenth attempt, and that success lifts the lock it set", async () => {
    const email = await verifiedAccount();
    for (let i = 0; i < 9; i++) expect((await postLogin(email, "wrong password")).status).toBe(401);
    expect((await postLogin(email, PASSWORD)).status).toBe(200);
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

describe("login input", () => {
  it.each([
    ["an implausible address", "not-an-email"],
    ["an address of 16,000 characters", `${"a".repeat(16_000)}@example.com`],
    ["an address with a zero-width space", "ad\u200Bmin@example.com"],
  ])("answers 400 for %s and stores nothing for it", async (_case, email) => {
    const response = await postLogin(email, "wrong password");
    expect(await textOf(response)).toEqual({ status: 400, type: TEXT, body: "Please provide a valid email address." });
    expect(
      await env.DB.prepare("SELECT count(*) AS n FROM login_failures WHERE email = ?")
        .bind(email.toLowerCase())
        .first("n"),
    ).toBe(0);
  });

  it("still answers 401 for a plausible unknown address", async () => {
    expect(await textOf(await postLogin(randomEmail(), "wrong password"))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
  });
});

describe("login lock", () => {
  it("locks an account for 15 minutes after 10 failed logins, even for the right password", async () => {
    const email = await verifiedAccount();
    for (let i = 0; i < 10; i++) expect((await postLogin(email, "wrong password")).status).toBe(401);
    const locked = await postLogin(email, PASSWORD);
    expect(await textOf(locked)).toEqual({ status: 429, type: TEXT, body: AuthMessage.loginLocked });
    const retryAfter = Number(locked.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(14 * 60);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);

    await env.DB.prepare("UPDATE login_failures SET lockedUntil = ? WHERE email = ?")
      .bind(Date.now() - 1, email)
      .run();
    expect((await postLogin(email, PASSWORD)).status).toBe(200);
    expect(await env.DB.prepare("SELECT * FROM login_failures WHERE email = ?").bind(email).first()).toBeNull();
  });

  it("resets the count on a successful login", async () => {
    const email = await verifiedAccount();
    for (let i = 0; i < 9; i++) await postLogin(email, "wrong password");
    expect((await postLogin(email, PASSWORD)).status).toBe(200);
    for (let i = 0; i < 9; i++) await postLogin(email, "wrong password");
    expect((await postLogin(email, "wrong password")).status).toBe(401);
    expect((await postLogin(email, PASSWORD)).status).toBe(429);
  });

  it("answers an unknown address exactly like a registered one", async () => {
    const unknown = randomEmail();
    for (let i = 0; i < 10; i++) {
      expect(await textOf(await postLogin(unknown, "wrong password"))).toEqual({
        status: 401,
        type: TEXT,
        body: Contract.invalidCredentials,
      });
    }
    const locked = await postLogin(unknown, PASSWORD);
    expect(await textOf(locked)).toEqual({ status: 429, type: TEXT, body: AuthMessage.loginLocked });
    expect(locked.headers.get("retry-after")).not.toBeNull();
  });
});
