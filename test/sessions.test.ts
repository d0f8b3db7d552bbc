import { env } from "cloudflare:workers";
import { decodeJwt, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import {
  bearer,
  call,
  callWithEnv,
  fireCron,
  JSON_TYPE,
  jsonOf,
  logIn,
  me,
  refresh,
  storedUser,
  TEXT,
  textOf,
  type Tokens,
  verifiedAccount,
} from "./helpers";

const DAY = 24 * 60 * 60 * 1000;
const INVALID_ACCESS = "Invalid or expired access token.";
const INVALID_REFRESH = "Invalid or expired refresh token.";

interface StoredSession {
  id: string;
  user_id: number;
  created_at: number;
  last_used_at: number;
  expires_at: number;
  generation: number;
  rotated_at: number;
  user_agent: string | null;
}

function sessionIdOf(token: string): string {
  return decodeJwt(token).sid as string;
}

async function storedSession(id: string): Promise<StoredSession | null> {
  return env.DB.prepare("SELECT * FROM sessions WHERE id = ?").bind(id).first<StoredSession>();
}

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

describe("POST /auth/login sessions", () => {
  it("creates a session with its user agent, and stores no token", async () => {
    const email = await verifiedAccount();
    const before = Date.now();
    const tokens = await logIn(email, { userAgent: "Mozilla/5.0\t(X11;   Linux)  Firefox/140.0 " });
    const session = await storedSession(sessionIdOf(tokens.token));
    expect(session).toMatchObject({ user_id: (await storedUser(email))!.id, generation: 0, user_agent: "Mozilla/5.0 (X11; Linux) Firefox/140.0" });
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
  it("rotates: a new access token and a new refresh token for the same session", async () => {
    const email = await verifiedAccount();
    const first = await logIn(email);
    const response = await refresh(first.refresh_token);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    const second = (await response.json()) as Tokens;
    expect(Object.keys(second)).toEqual(["token", "refresh_token", "expires_in"]);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(decodeJwt(second.token)).toMatchObject({ id: String((await storedUser(email))!.id), sid: sessionIdOf(first.token) });
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

    expect(await textOf(await refresh(first.refresh_token))).toEqual({ status: 401, type: TEXT, body: INVALID_REFRESH });
    expect(await storedSession(id)).toBeNull();
    // Every token of that login is dead: the thief's and the app's.
    expect(await textOf(await refresh(second.refresh_token))).toEqual({ status: 401, type: TEXT, body: INVALID_REFRESH });
    expect(await textOf(await me(second.token))).toEqual({ status: 401, type: TEXT, body: INVALID_ACCESS });
    expect(await textOf(await me(first.token))).toEqual({ status: 401, type: TEXT, body: INVALID_ACCESS });
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
    expect(await textOf(await refresh(token))).toEqual({ status: 401, type: TEXT, body: INVALID_REFRESH });
  });

  it("answers 401 for the refresh token of an expired session", async () => {
    const { token, refresh_token: refreshToken } = await logIn(await verifiedAccount());
    await setSession(sessionIdOf(token), { expires_at: Date.now() - 1 });
    expect(await textOf(await refresh(refreshToken))).toEqual({ status: 401, type: TEXT, body: INVALID_REFRESH });
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
      callWithEnv({ RATE_LIMITS: "on" }, "POST", "/auth/refresh", { refresh_token: "not-a-token" }, { "CF-Connecting-IP": "203.0.113.91" });
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

    expect(await textOf(await me(token))).toEqual({ status: 401, type: TEXT, body: INVALID_ACCESS });
    expect(await textOf(await refresh(refreshToken))).toEqual({ status: 401, type: TEXT, body: INVALID_REFRESH });
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
    expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: INVALID_ACCESS });
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
      current: false,
    });
  });

  it("answers 401 for a token of an ended session", async () => {
    const { token } = await logIn(await verifiedAccount());
    await call("POST", "/auth/logout", undefined, bearer(token));
    expect(await textOf(await call("GET", "/auth/sessions", undefined, bearer(token)))).toEqual({ status: 401, type: TEXT, body: INVALID_ACCESS });
  });
});

describe("DELETE /auth/sessions/{id} and DELETE /auth/sessions", () => {
  it("ends one of the caller's other sessions", async () => {
    const email = await verifiedAccount();
    const phone = await logIn(email);
    const laptop = await logIn(email);
    const response = await call("DELETE", `/auth/sessions/${sessionIdOf(laptop.token)}`, undefined, bearer(phone.token));
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
    const list = (await (await call("GET", "/auth/sessions", undefined, bearer(sessions[0]!.token))).json()) as unknown[];
    expect(list).toHaveLength(1);
  });

});

describe("GET /auth/me", () => {
  it("answers the caller's id, e-mail, verified flag and creation time", async () => {
    const email = await verifiedAccount();
    const { token } = await logIn(email);
    const user = await storedUser(email);
    expect(await jsonOf(await me(token))).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: { id: user!.id, email, verified: true, created_at: new Date(user!.createdAt).toISOString() },
    });
  });
});

describe("access tokens that are refused", () => {
  const sid = "AAAAAAAAAAAAAAAAAAAAAA";

  it("refuses a validly signed token for a user that does not exist: 401, never a 500", async () => {
    const token = await forged({ id: "987654321", sid });
    for (const [method, body] of [["GET"], ["POST", { title: "t", content: "c" }]] as const) {
      expect(await jsonOf(await privateNotes(method, "/notes", token, body))).toEqual({ status: 401, type: JSON_TYPE, body: { error: "Unauthorized" } });
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
    for (const bad of [await forged({ id: claims.id, sid: claims.sid }, null), await forged({ id: claims.id, sid: claims.sid }, 7200)]) {
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

describe("scheduled clean-up", () => {
  it("deletes expired sessions when the cron trigger fires, and keeps live ones", async () => {
    const email = await verifiedAccount();
    const expired = await logIn(email);
    const live = await logIn(email);
    await setSession(sessionIdOf(expired.token), { expires_at: Date.now() - 1 });

    await fireCron();
    expect(await storedSession(sessionIdOf(expired.token))).toBeNull();
    expect(await storedSession(sessionIdOf(live.token))).not.toBeNull();
  });
});
