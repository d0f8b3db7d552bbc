import { and, desc, eq, gt, ne } from "drizzle-orm";
import { Hono, type Context } from "hono";
import { ConfigError } from "../config";
import type { BatchItem } from "drizzle-orm/batch";
import { sessions, users } from "../db/schema";
import { tooManyRequests } from "../lib/http";
import { maskEmail } from "../lib/log";
import { verifyPassword } from "../lib/password";
import { readRefreshToken } from "../lib/tokens";
import { jsonBody } from "../lib/validation";
import type { AppEnv } from "../types";
import { issueDeviceToken, maybeDeviceToken, readDeviceToken } from "./devices";
import { loginCounter } from "./limits";
import { AuthMessage } from "./messages";
import { LoginBody, RefreshBody } from "./schemas";
import { callerSession, liveSession, requireAccessToken, sessionCheck, unauthorized } from "./caller";
import { createSession, rotateSession, sessionTokens, shortUserAgent } from "./session-store";

function jwtSecretOf(c: Context<AppEnv>): string {
  const secret = c.var.config.jwtSecret;
  if (!secret) throw new ConfigError("JWT_SECRET_KEY is not set; cannot sign tokens");
  return secret;
}

/**
 * The one way a login whose password has been checked becomes a session (a second factor, where an
 * account has one, ends here once it is verified): creates the session, only while the account still has
 * the password hash that was checked, with `alongside` (what the check's claim releases) in the same
 * transaction, and answers with the tokens and the device's token (renewed for the device it came from,
 * or a new device's), bound to that password hash. Nothing is stored for the device token (see devices.ts).
 */
export async function openSession(
  c: Context<AppEnv>,
  account: { id: number; email: string; checkedHash: string },
  deviceId: string | undefined,
  alongside: BatchItem<"sqlite">[] = [],
) {
  const { db, log } = c.var;
  const now = Date.now();
  const secret = jwtSecretOf(c);
  const session = createSession(db, account.id, account.checkedHash, shortUserAgent(c.req.header("User-Agent")), now);
  const [created] = await db.batch([session.query, ...alongside]);
  // The password was reset or changed, or the account deleted, while bcrypt ran: the password checked
  // is no longer the account's.
  if (created.length === 0) return c.text(AuthMessage.invalidCredentials, 401);
  log.info("session_created", { userId: account.id, sessionId: session.id });
  const [tokens, deviceToken] = await Promise.all([
    sessionTokens({ userId: account.id, sessionId: session.id }, 0, secret, log),
    issueDeviceToken(secret, account.email, account.checkedHash, now, deviceId),
  ]);
  return c.json({ ...tokens, device_token: deviceToken }, 200);
}

/** Sessions: log in, refresh, log out, and the caller's list of sessions (devices). */
export const sessionRoutes = new Hono<AppEnv>()
  .post("/login", jsonBody(LoginBody), async (c) => {
    const { email, password, device_token: deviceToken } = c.req.valid("json");
    const { config, db, log } = c.var;
    const now = Date.now();
    // A device token is bound to the account's password hash (see devices.ts): only a login that sends
    // one reads the hash first, to know whose attempt to claim.
    let deviceId: string | undefined;
    if (maybeDeviceToken(deviceToken, now)) {
      const [account] = await db.select({ password: users.password }).from(users).where(eq(users.email, email));
      deviceId = await readDeviceToken(deviceToken, email, account?.password, jwtSecretOf(c), now);
    }
    const counter = loginCounter(db, email, deviceId, now);

    // One round trip: claim the attempt (before bcrypt, see claimLogin), read the account, and read the
    // lock as the claim left it, for Retry-After. Attempts are kept per address, registered or not, so
    // an unknown address is answered (and locked) exactly like a real one; a device of the owner's (a
    // valid device token) is judged on its own attempts instead.
    const [[claim], [user], [lock]] = await db.batch([
      counter.claim,
      db.select({ id: users.id, password: users.password, isVerified: users.isVerified }).from(users).where(eq(users.email, email)),
      counter.lock,
    ]);
    if (!claim) return tooManyRequests(c, (lock?.lockedUntil ?? now + counter.lockMs) - now, AuthMessage.loginLocked);
    if (claim.lockedUntil > 0) log.warn("login_locked", { email: maskEmail(email), lockedForMs: counter.lockMs, ...(deviceId && { deviceId }) });

    // The password is checked first: an unverified account with a wrong password is a 401, not a 403.
    // A failure needs no further write: the claim has counted it.
    if (!(await verifyPassword(password, user?.password, config.bcryptCost)) || !user) {
      return c.text(AuthMessage.invalidCredentials, 401);
    }
    // The right password ends the run of attempts.
    if (!user.isVerified) {
      await counter.release(claim.lockedUntil);
      return c.text(AuthMessage.notVerified, 403);
    }
    return openSession(c, { id: user.id, email, checkedHash: user.password }, deviceId, [counter.release(claim.lockedUntil)]);
  })

  .post("/refresh", jsonBody(RefreshBody), async (c) => {
    const { refresh_token: refreshToken } = c.req.valid("json");
    const { db, log } = c.var;
    const secret = jwtSecretOf(c);

    const claims = await readRefreshToken(refreshToken, secret);
    if (!claims) return c.text(AuthMessage.invalidRefreshToken, 401);
    const { rotated, revoked } = await rotateSession(db, claims, Date.now());
    if (revoked) log.warn("refresh_token_reused", { userId: revoked.userId, sessionId: claims.sessionId, detail: "session revoked" });
    if (!rotated) return c.text(AuthMessage.invalidRefreshToken, 401);
    return c.json(await sessionTokens({ userId: rotated.userId, sessionId: claims.sessionId }, rotated.generation, secret, log), 200);
  })

  .post("/logout", requireAccessToken, async (c) => {
    const { db, log } = c.var;
    const caller = c.var.caller;
    const [ended] = await db.delete(sessions).where(callerSession(caller, Date.now())).returning({ id: sessions.id });
    if (!ended) return unauthorized(c);
    log.info("session_ended", { userId: caller.userId, sessionId: caller.sessionId });
    return c.body(null, 204);
  })

  .get("/sessions", requireAccessToken, async (c) => {
    const { db } = c.var;
    const caller = c.var.caller;
    const now = Date.now();
    const [[live], list] = await db.batch([
      sessionCheck(db, caller, now),
      db
        .select()
        .from(sessions)
        .where(and(eq(sessions.userId, caller.userId), gt(sessions.expiresAt, now)))
        .orderBy(desc(sessions.lastUsedAt), desc(sessions.createdAt)),
    ]);
    if (!live) return unauthorized(c);
    return c.json(
      list.map((session) => ({
        id: session.id,
        created_at: new Date(session.createdAt).toISOString(),
        last_used_at: new Date(session.lastUsedAt).toISOString(),
        expires_at: new Date(session.expiresAt).toISOString(),
        user_agent: session.userAgent,
        current: session.id === caller.sessionId,
      })),
      200,
    );
  })

  .delete("/sessions", requireAccessToken, async (c) => {
    const { db } = c.var;
    const caller = c.var.caller;
    const now = Date.now();
    const [[live]] = await db.batch([
      sessionCheck(db, caller, now),
      db.delete(sessions).where(and(eq(sessions.userId, caller.userId), ne(sessions.id, caller.sessionId), liveSession(caller, now))),
    ]);
    return live ? c.body(null, 204) : unauthorized(c);
  })

  .delete("/sessions/:id", requireAccessToken, async (c) => {
    const { db } = c.var;
    const caller = c.var.caller;
    const now = Date.now();
    const [[live], ended] = await db.batch([
      sessionCheck(db, caller, now),
      db
        .delete(sessions)
        .where(and(eq(sessions.id, c.req.param("id")), eq(sessions.userId, caller.userId), liveSession(caller, now)))
        .returning({ id: sessions.id }),
    ]);
    if (!live) return unauthorized(c);
    // Someone else's session, or one that does not exist: the same 404, so ids cannot be probed.
    return ended.length > 0 ? c.body(null, 204) : c.text(AuthMessage.sessionNotFound, 404);
  });
