import { and, desc, eq, gt, ne, sql } from "drizzle-orm";
import { Hono } from "hono";
import { mfaFactors, sessions, users } from "../db/schema";
import { badJson, describeRoute, json, ref, text, throttled } from "../lib/describe";
import { tooManyRequests } from "../lib/http";
import { maskEmail } from "../lib/log";
import { verifyPassword } from "../lib/password";
import { readRefreshToken } from "../lib/refresh-token";
import { MINUTE, SECOND } from "../lib/units";
import { jsonBody } from "../lib/validation";
import type { AppEnv } from "../types";
import { callerSession, liveSession, requireAccessToken, sessionCheck, unauthorized } from "./caller";
import { maybeDeviceToken, readDeviceToken } from "./devices";
import { accountErrors, accountsTag, bearer, bearerErrors } from "./docs";
import { DEVICE_FAILURES_BEFORE_LOCK, DEVICE_LOCK_MS, LOGIN_FAILURES_BEFORE_LOCK, LOGIN_LOCK_MS, loginCounter } from "./limits";
import { AuthMessage } from "./messages";
import { jwtSecretOf, passFirstFactor } from "./gate";
import { LoginBody, RefreshBody } from "./schemas";
import { REFRESH_GRACE_MS, rotateSession, sessionTokens } from "./session-store";
import type { SessionJson, TokensJson } from "./shapes";

/** Whether the account (a row of `users`) has an active second factor: read with the login's other reads. */
const hasActiveFactor = sql<number>`EXISTS (SELECT 1 FROM ${mfaFactors} WHERE ${mfaFactors.userId} = ${users.id} AND ${mfaFactors.status} = 'active')`;

/** Sessions: log in, refresh, log out, and the caller's list of sessions (devices). */
export const sessionRoutes = new Hono<AppEnv>()
  .post(
    "/login",
    describeRoute({
      tags: accountsTag,
      summary: "Log in",
      description:
        "Starts a session: an access token (JWT, one hour), a refresh token and a device token. " +
        `${LOGIN_FAILURES_BEFORE_LOCK} attempts (failed or in flight) without a device token lock the address for ${LOGIN_LOCK_MS / MINUTE} minutes; ` +
        `a valid device token of the address is judged on that device's own attempts instead (${DEVICE_FAILURES_BEFORE_LOCK} lock the device ` +
        `for ${DEVICE_LOCK_MS / MINUTE} minutes). Any other device_token counts as none.`,
      requestExample: { email: "ada@example.com", password: "correct horse battery" },
      responses: {
        "200": json("Logged in; or, for an account with two-factor authentication, the challenge to answer at POST /auth/mfa/verify", {
          oneOf: [ref("Login"), ref("MfaChallenge")],
        }),
        "400": text("Malformed input", AuthMessage.emailAndPasswordRequired, AuthMessage.emailAndPasswordStrings, AuthMessage.invalidEmail, ...badJson),
        "401": text("Unknown e-mail or wrong password", AuthMessage.invalidCredentials),
        "403": text("E-mail not verified", AuthMessage.notVerified),
        ...accountErrors,
        "429": throttled(text("Address (or device) locked, or the per-client limit", AuthMessage.loginLocked, AuthMessage.clientThrottled)),
      },
    }),
    jsonBody(LoginBody), async (c) => {
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
      db
        .select({ id: users.id, password: users.password, isVerified: users.isVerified, hasFactor: hasActiveFactor })
        .from(users)
        .where(eq(users.email, email)),
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
    // The gate every way into a session passes: a second factor, where the account has one, comes first.
    return passFirstFactor(c, { id: user.id, email, checkedHash: user.password, hasFactor: Boolean(user.hasFactor) }, deviceId, [
      counter.release(claim.lockedUntil),
    ]);
  })

  .post(
    "/refresh",
    describeRoute({
      tags: accountsTag,
      summary: "Refresh the tokens",
      description:
        `Exchanges the refresh token for a new pair (rotation). The replaced token still gives the same new pair for ${REFRESH_GRACE_MS / SECOND} seconds ` +
        "(concurrent refreshes of one app); after that, presenting it again ends the whole session.",
      requestExample: { refresh_token: "AAAAAAAAAAAAAAAAAAAAAA.0.…" },
      responses: {
        "200": json("A new pair of tokens", ref("Tokens")),
        "400": text("Missing or malformed field", AuthMessage.refreshTokenRequired, AuthMessage.refreshTokenString, ...badJson),
        "401": text("Malformed, unknown, replaced, expired or revoked refresh token", AuthMessage.invalidRefreshToken),
        ...accountErrors,
      },
    }),
    jsonBody(RefreshBody), async (c) => {
    const { refresh_token: refreshToken } = c.req.valid("json");
    const { db, log } = c.var;
    const secret = jwtSecretOf(c);

    const claims = await readRefreshToken(refreshToken, secret);
    if (!claims) return c.text(AuthMessage.invalidRefreshToken, 401);
    const { rotated, revoked } = await rotateSession(db, claims, Date.now());
    if (revoked) log.warn("refresh_token_reused", { userId: revoked.userId, sessionId: claims.sessionId, detail: "session revoked" });
    if (!rotated) return c.text(AuthMessage.invalidRefreshToken, 401);
    const answer: TokensJson = await sessionTokens({ userId: rotated.userId, sessionId: claims.sessionId }, rotated.generation, secret, log);
    return c.json(answer, 200);
  })

  .post(
    "/logout",
    describeRoute({
      ...bearer,
      summary: "Log out",
      description: "Ends the session of the access token: its access and refresh tokens are refused from now on.",
      responses: { "204": { description: "Logged out" }, ...bearerErrors },
    }),
    requireAccessToken, async (c) => {
    const { db, log } = c.var;
    const caller = c.var.caller;
    const [ended] = await db.delete(sessions).where(callerSession(caller, Date.now())).returning({ id: sessions.id });
    if (!ended) return unauthorized(c);
    log.info("session_ended", { userId: caller.userId, sessionId: caller.sessionId });
    return c.body(null, 204);
  })

  .get(
    "/sessions",
    describeRoute({
      ...bearer,
      summary: "List your sessions",
      description: "The caller's live sessions (devices), the most recently used first.",
      responses: { "200": json("The sessions", { type: "array", items: ref("Session") }), ...bearerErrors },
    }),
    requireAccessToken, async (c) => {
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
      list.map((session): SessionJson => ({
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

  .delete(
    "/sessions",
    describeRoute({
      ...bearer,
      summary: "End your other sessions",
      description: "Ends every session of the caller except the current one.",
      responses: { "204": { description: "Ended" }, ...bearerErrors },
    }),
    requireAccessToken, async (c) => {
    const { db } = c.var;
    const caller = c.var.caller;
    const now = Date.now();
    const [[live]] = await db.batch([
      sessionCheck(db, caller, now),
      db.delete(sessions).where(and(eq(sessions.userId, caller.userId), ne(sessions.id, caller.sessionId), liveSession(caller, now))),
    ]);
    return live ? c.body(null, 204) : unauthorized(c);
  })

  .delete(
    "/sessions/:id",
    describeRoute({
      ...bearer,
      summary: "End one of your sessions",
      parameters: [{ name: "id", in: "path", required: true, description: "A session id from GET /auth/sessions", schema: { type: "string" } }],
      responses: { "204": { description: "Ended" }, "404": text("No such session of the caller", AuthMessage.sessionNotFound), ...bearerErrors },
    }),
    requireAccessToken, async (c) => {
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
