import { and, eq, gt, inArray, sql, type SQL } from "drizzle-orm";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { ConfigError } from "../config";
import { sessions, users } from "./schema";
import { verifyAccessToken, type AccessClaims } from "../lib/access-token";
import type { AppEnv, Database } from "../types";
import { AuthMessage } from "./messages";

// How an address is written and checked, the one spelling of it: other areas that take an address (sharing a
// note with one) use these, so that an address compares equal to the account's wherever it is typed.
export { normalizeEmail, plausibleEmail } from "./requests";

/**
 * The caller: who an access token speaks for, whether the session it belongs to is still live, and the account
 * behind an address. This is all the other areas take from the accounts area (their one seam into it,
 * eslint.config.js's SEAMS): notes and live updates build their statements on these conditions, and run them in
 * notes/runner.ts.
 */

/** The environment of a handler behind requireAccessToken: `c.var.caller` is always set there. */
export type CallerEnv = AppEnv & { Variables: { caller: AccessClaims } };

/** A caller as a statement names it: its values, or a compiled statement's placeholders for them (db/compiled.ts). */
export interface CallerRef {
  sessionId: string | SQL<string>;
  userId: number | SQL<number>;
}

/** The values of a compiled statement that acts for a caller at a time: its session, its user, and `now`. */
export type CallerValues = AccessClaims & { now: number };

/** The caller's session row, as long as it is live (a condition on `sessions`). */
export function callerSession(caller: CallerRef, now: number | SQL<number>): SQL {
  return and(eq(sessions.id, caller.sessionId), eq(sessions.userId, caller.userId), gt(sessions.expiresAt, now))!;
}

/** The condition that the caller's session is live: part of every statement a session authorizes. */
export function liveSession(caller: CallerRef, now: number | SQL<number>): SQL {
  return sql`EXISTS (SELECT 1 FROM ${sessions} WHERE ${callerSession(caller, now)})`;
}

/**
 * The caller's user id (`userId`) as a select source, one row while the caller's session is live and
 * none after: what another area writes `INSERT … SELECT … FROM` to act for the caller only while it may,
 * without naming the sessions table.
 */
export function liveSessionOf(db: Database, caller: CallerRef, now: number | SQL<number>) {
  return db.select({ userId: sessions.userId }).from(sessions).where(callerSession(caller, now)).as("live_session");
}

/** The caller's session, if live: batch it with the statement it authorizes, to tell 401 from the rest. */
export function sessionCheck(db: Database, caller: CallerRef, now: number | SQL<number>) {
  return db.select({ id: sessions.id }).from(sessions).where(callerSession(caller, now));
}

/**
 * The id of the account that has verified address `email` (normalized), as a scalar: NULL when no account has.
 * For what another area addresses to a person by mail (a note shared with an address): it reaches the account
 * only once the address is proven, never an account that merely registered it.
 */
export function accountVerifying(email: SQL<string> | string): SQL<number | null> {
  return sql<
    number | null
  >`(SELECT ${users.id} FROM ${users} WHERE ${and(eq(users.email, email), eq(users.isVerified, true))})`;
}

/** The condition that `email` (normalized) is the caller's own address. */
export function isCallersAddress(caller: CallerRef, email: SQL<string> | string): SQL {
  return sql`EXISTS (SELECT 1 FROM ${users} WHERE ${and(eq(users.id, caller.userId), eq(users.email, email))})`;
}

/**
 * Which of `sessionIds` are live sessions of `userId` at `now`, each with the time it ends (one query): for
 * what holds on to sessions beyond one request, the live sockets (src/live/hub.ts), to close those whose
 * session has ended.
 */
export async function liveSessionsAmong(
  db: Database,
  userId: number,
  sessionIds: readonly string[],
  now: number,
): Promise<Map<string, number>> {
  if (sessionIds.length === 0) return new Map();
  const rows = await db
    .select({ id: sessions.id, expiresAt: sessions.expiresAt })
    .from(sessions)
    .where(and(inArray(sessions.id, [...sessionIds]), eq(sessions.userId, userId), gt(sessions.expiresAt, now)));
  return new Map(rows.map((row) => [row.id, row.expiresAt]));
}

/**
 * The claims of an `Authorization: Bearer <access token>` header, or undefined when there is none or
 * it is not valid. Checks the signature and the claims only; the session is checked in D1 by the handler.
 */
export async function bearerClaims(
  authorization: string | undefined,
  jwtSecret: string | undefined,
): Promise<AccessClaims | undefined> {
  if (!jwtSecret) throw new ConfigError("JWT_SECRET_KEY is not set; cannot check access tokens");
  const token = /^Bearer +([^ ]+)$/i.exec(authorization ?? "")?.[1];
  return token ? verifyAccessToken(token, jwtSecret).catch(() => undefined) : undefined;
}

/** The secret tokens are signed with; a deployment without one fails loudly (a ConfigError, logged as a 500). */
export function jwtSecretOf(c: Context<AppEnv>): string {
  const secret = c.var.config.jwtSecret;
  if (!secret) throw new ConfigError("JWT_SECRET_KEY is not set; cannot sign tokens");
  return secret;
}

/** The body of the accounts area's 401 for a missing, invalid or revoked access token (for routes' descriptions). */
export const invalidAccessToken = AuthMessage.invalidAccessToken;

/** The accounts area's 401 for a missing, invalid or revoked access token. */
export function unauthorized(c: Context) {
  return c.text(invalidAccessToken, 401, { "WWW-Authenticate": "Bearer" });
}

/** For /auth endpoints that act for a logged-in user: sets `c.var.caller` from a valid access token. */
export const requireAccessToken = createMiddleware<CallerEnv>(async (c, next) => {
  const caller = await bearerClaims(c.req.header("Authorization"), c.var.config.jwtSecret);
  if (!caller) return unauthorized(c);
  c.set("caller", caller);
  await next();
});
