import { Hono, type Context } from "hono";
import { batchOf } from "../../db/client";
import { badJson, describeRoute, json, ref, text, throttled } from "../../lib/describe";
import { tooManyRequests } from "../../lib/http";
import { maskEmail } from "../../lib/log";
import { verifyPassword } from "../../lib/password";
import { readRefreshToken } from "../../lib/refresh-token";
import { MINUTE, SECOND } from "../../lib/units";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { jwtSecretOf, requireAccessToken, unauthorized } from "../caller";
import { loginCounter } from "../limits/login";
import { claimSlot, releaseWindow } from "../limits/windows";
import { AuthMessage } from "../messages";
import { isActive, factorOf } from "../core/factor";
import { accountErrors, accountsTag, bearer, bearerErrors } from "../openapi";
import { LoginBody, RefreshBody } from "../requests";
import type { SessionJson } from "../shapes";
import { maybeDeviceToken, readDeviceToken, staleDevicesWindow } from "../core/devices";
import { readDetail, recordFailedSignIn, signIn } from "../core/gate";
import { accountByEmail, deviceAccount } from "../core/accounts";
import {
  endOtherSessionsNow,
  endSessions,
  endSession,
  endSessionById,
  listSessions,
  rotateSession,
  sessionTokens,
} from "../core/sessions";
import {
  DEVICE_FAILURES_BEFORE_LOCK,
  DEVICE_LOCK_MS,
  LOGIN_FAILURES_BEFORE_LOCK,
  LOGIN_LOCK_MS,
  REFRESH_GRACE_MS,
  STALE_DEVICE_FAILURES_PER_HOUR,
} from "../policy";

/**
 * The device a login is judged on: the device of a valid device token of the address's account (only a
 * login that sends something shaped like one reads the account first). A stale token (issued before the
 * last password change) also claims a slot of the account's stale-device allowance, given back by a right
 * password; with the allowance used up it counts for nothing (see devices.ts).
 */
async function deviceOf(
  c: Context<AppEnv>,
  email: string,
  token: unknown,
  now: number,
): Promise<{ id: string; stale?: { window: string; windowStart: number } } | undefined> {
  if (!maybeDeviceToken(token, now)) return undefined;
  const { db } = c.var;
  const account = await deviceAccount(db, email);
  const device = await readDeviceToken(token, account, jwtSecretOf(c), now);
  if (!device || !account) return undefined;
  // Token expiries have whole seconds: a token of the very second of the change counts as issued after it.
  if (device.issuedAt >= Math.floor(account.passwordChangedAt / SECOND)) return { id: device.id };
  const window = staleDevicesWindow(account.id);
  const slot = await claimSlot(db, window, STALE_DEVICE_FAILURES_PER_HOUR, now);
  return "waitMs" in slot ? undefined : { id: device.id, stale: { window, windowStart: slot.windowStart } };
}

/** A password login: the attempt claimed before bcrypt, then the gate. */
async function passwordLogin(c: Context<AppEnv>, email: string, password: string, deviceToken: string | undefined) {
  const { config, db, log } = c.var;
  const now = Date.now();
  const device = await deviceOf(c, email, deviceToken, now);
  const deviceId = device?.id;
  const counter = loginCounter(db, email, deviceId, now);

  // One round trip: claim the attempt (before bcrypt, see claimLogin), read the account, and read the
  // lock as the claim left it, for Retry-After. Attempts are kept per address, registered or not, so
  // an unknown address is answered (and locked) exactly like a real one; a device of the owner's (a
  // valid device token) is judged on its own attempts instead.
  const [[claim], [user], [lock]] = await db.batch([counter.claim, accountByEmail(db, email), counter.lock]);
  if (!claim) return tooManyRequests(c, (lock?.lockedUntil ?? now + counter.lockMs) - now, AuthMessage.loginLocked);
  if (claim.lockedUntil > 0)
    log.warn("login_locked", { email: maskEmail(email), lockedForMs: counter.lockMs, ...(deviceId && { deviceId }) });

  // The password is checked first: an unverified account with a wrong password is a 401, not a 403.
  // A failure needs no further write: the claim has counted it.
  if (!(await verifyPassword(password, user?.password, config.bcryptCost)) || !user) {
    if (user) recordFailedSignIn(c, user.id, { reason: "password" });
    return c.text(AuthMessage.invalidCredentials, 401);
  }
  // The right password ends the run of attempts, and gives back a stale device's slot.
  const release = [
    counter.release(claim.lockedUntil),
    ...(device?.stale ? [releaseWindow(db, device.stale.window, device.stale.windowStart)] : []),
  ];
  if (!user.isVerified) {
    await batchOf(db, release);
    return c.text(AuthMessage.notVerified, 403);
  }
  const proof = {
    account: { id: user.id, email, signInEpoch: user.signInEpoch },
    amr: ["pwd"] as const,
    deviceId,
    factorDue: isActive(factorOf(user)),
  };
  return signIn(c, proof, release);
}

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
        "200": json(
          "Logged in; or, for an account with two-factor authentication, the challenge to answer at POST /auth/mfa/verify",
          {
            oneOf: [ref("Login"), ref("MfaChallenge")],
          },
        ),
        "400": text(
          "Malformed input",
          AuthMessage.emailAndPasswordRequired,
          AuthMessage.emailAndPasswordStrings,
          AuthMessage.invalidEmail,
          ...badJson,
        ),
        "401": text("Unknown e-mail or wrong password", AuthMessage.invalidCredentials),
        "403": text(
          "E-mail not verified, or the account suspended (admin API)",
          AuthMessage.notVerified,
          AuthMessage.accountSuspended,
        ),
        ...accountErrors,
        "429": throttled(
          text(
            "Address (or device) locked, or the per-client limit",
            AuthMessage.loginLocked,
            AuthMessage.clientThrottled,
          ),
        ),
      },
    }),
    jsonBody(LoginBody),
    async (c) => {
      const { email, password, device_token: deviceToken } = c.req.valid("json");
      return passwordLogin(c, email, password, deviceToken);
    },
  )

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
        "400": text(
          "Missing or malformed field",
          AuthMessage.refreshTokenRequired,
          AuthMessage.refreshTokenString,
          ...badJson,
        ),
        "401": text("Malformed, unknown, replaced, expired or revoked refresh token", AuthMessage.invalidRefreshToken),
        ...accountErrors,
      },
    }),
    jsonBody(RefreshBody),
    async (c) => {
      const { refresh_token: refreshToken } = c.req.valid("json");
      const { log } = c.var;
      const secret = jwtSecretOf(c);
      const claims = await readRefreshToken(refreshToken, secret);
      if (!claims) return c.text(AuthMessage.invalidRefreshToken, 401);
      const { rotated, revoked } = await endSessions(
        c,
        (ending) => rotateSession(ending, c.var.audit, claims, Date.now()),
        (rotation) => rotation.revoked?.userId,
      );
      if (revoked) {
        log.warn("refresh_token_reused", {
          userId: revoked.userId,
          sessionId: claims.sessionId,
          detail: "session revoked",
        });
      }
      if (!rotated) return c.text(AuthMessage.invalidRefreshToken, 401);
      return c.json(
        await sessionTokens({ userId: rotated.userId, sessionId: claims.sessionId }, rotated.generation, secret, log),
        200,
      );
    },
  )

  .post(
    "/logout",
    describeRoute({
      ...bearer,
      summary: "Log out",
      description: "Ends the session of the access token: its access and refresh tokens are refused from now on.",
      responses: { "204": { description: "Logged out" }, ...bearerErrors },
    }),
    requireAccessToken,
    async (c) => {
      const caller = c.var.caller;
      const ended = await endSessions(
        c,
        (ending) => endSession(ending, caller, Date.now()),
        (ok) => ok && caller.userId,
      );
      if (!ended) return unauthorized(c);
      c.var.log.info("session_ended", { userId: caller.userId, sessionId: caller.sessionId });
      return c.body(null, 204);
    },
  )

  .get(
    "/sessions",
    describeRoute({
      ...bearer,
      summary: "List your sessions",
      description:
        "The caller's live sessions (devices), the most recently signed in or refreshed first (`last_used_at` moves on a login and a refresh only).",
      responses: { "200": json("The sessions", { type: "array", items: ref("Session") }), ...bearerErrors },
    }),
    requireAccessToken,
    async (c) => {
      const caller = c.var.caller;
      const list = await listSessions(c.var.db, caller, Date.now());
      if (!list) return unauthorized(c);
      return c.json(
        list.map((session): SessionJson => ({
          id: session.id,
          created_at: new Date(session.createdAt).toISOString(),
          last_used_at: new Date(session.lastUsedAt).toISOString(),
          expires_at: new Date(session.expiresAt).toISOString(),
          user_agent: session.userAgent,
          amr: session.amr.split(" "),
          provider: readDetail(session.detail).provider ?? null,
          current: session.id === caller.sessionId,
        })),
        200,
      );
    },
  )

  .delete(
    "/sessions",
    describeRoute({
      ...bearer,
      summary: "End your other sessions",
      description: "Ends every session of the caller except the current one.",
      responses: { "204": { description: "Ended" }, ...bearerErrors },
    }),
    requireAccessToken,
    async (c) => {
      const { caller } = c.var;
      const live = await endSessions(
        c,
        (ending) => endOtherSessionsNow(ending, c.var.audit, caller, Date.now()),
        (ok) => ok && caller.userId,
      );
      if (!live) return unauthorized(c);
      return c.body(null, 204);
    },
  )

  .delete(
    "/sessions/:id",
    describeRoute({
      ...bearer,
      summary: "End one of your sessions",
      parameters: [
        {
          name: "id",
          in: "path",
          required: true,
          description: "A session id from GET /auth/sessions",
          schema: { type: "string" },
        },
      ],
      responses: {
        "204": { description: "Ended" },
        "404": text("No such session of the caller", AuthMessage.sessionNotFound),
        ...bearerErrors,
      },
    }),
    requireAccessToken,
    async (c) => {
      const { caller } = c.var;
      const { live, ended } = await endSessions(
        c,
        (ending) => endSessionById(ending, c.var.audit, caller, c.req.param("id"), Date.now()),
        (result) => result.ended && caller.userId,
      );
      if (!live) return unauthorized(c);
      // Someone else's session, or one that does not exist: the same 404, so ids cannot be probed.
      if (!ended) return c.text(AuthMessage.sessionNotFound, 404);
      return c.body(null, 204);
    },
  );
