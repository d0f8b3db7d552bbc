import { and, eq, gt, sql } from "drizzle-orm";
import { sessions, users } from "../db/schema";
import { DAY } from "../lib/units";
import { ACCESS_TOKEN_TTL_SECONDS, signAccessToken, type AccessClaims } from "../lib/access-token";
import { randomId } from "../lib/crypto";
import { refreshTokenFor, type RefreshClaims } from "../lib/refresh-token";
import type { AppEnv, Database } from "../types";

/** Server-side sessions: one per login, checked wherever an access token is. */

/** A session ends this long after its last refresh... */
export const SESSION_IDLE_MS = 30 * DAY;
/** ...and at the latest this long after its login. */
export const SESSION_ABSOLUTE_MS = 90 * DAY;
/** For this long after a refresh, the refresh token it replaced still refreshes (to the same new token). */
export const REFRESH_GRACE_MS = 10_000;
/** What is kept of a User-Agent header. */
export const USER_AGENT_CHARS = 200;

/** The User-Agent as a session shows it: control characters out, white space folded, at most 200 characters. */
export function shortUserAgent(header: string | undefined): string | null {
  const text = (header ?? "").replace(/[\p{C}\s]+/gu, " ").trim();
  return text === "" ? null : [...text].slice(0, USER_AGENT_CHARS).join("");
}

/**
 * A new session for a login, whose id is the access token's `sid`: created only while the account still
 * has the password hash the login checked, so a login racing a password reset or change, or the deletion
 * of the account, starts no session (and hits no foreign key). Returns nothing then.
 */
export function createSession(db: Database, userId: number, checkedHash: string, userAgent: string | null, now: number) {
  const id = randomId();
  const query = db
    .insert(sessions)
    .select(
      // Every column, in the table's order (drizzle's rule for INSERT … SELECT).
      db
        .select({
          id: sql<string>`${id}`.as("id"),
          userId: users.id,
          createdAt: sql<number>`${now}`.as("created_at"),
          lastUsedAt: sql<number>`${now}`.as("last_used_at"),
          expiresAt: sql<number>`${now + SESSION_IDLE_MS}`.as("expires_at"),
          generation: sql<number>`0`.as("generation"),
          rotatedAt: sql<number>`0`.as("rotated_at"),
          userAgent: sql<string | null>`${userAgent}`.as("user_agent"),
          passwordFailures: sql<number>`0`.as("password_failures"),
        })
        .from(users)
        .where(and(eq(users.id, userId), eq(users.password, checkedHash))),
    )
    .returning({ id: sessions.id });
  return { id, query };
}

/** The answer of a login and of a refresh: the spec's `token`, and the refresh token beside it. */
export async function sessionTokens(
  caller: AccessClaims,
  generation: number,
  secret: string,
  log: AppEnv["Variables"]["log"],
): Promise<{ token: string; refresh_token: string; expires_in: number }> {
  const [token, refreshToken] = await Promise.all([
    signAccessToken(caller, secret, log),
    refreshTokenFor({ sessionId: caller.sessionId, generation }, secret),
  ]);
  return { token, refresh_token: refreshToken, expires_in: ACCESS_TOKEN_TTL_SECONDS };
}

/**
 * A refresh, as one batch (one transaction) of two conditional writes, so concurrent refreshes cannot
 * interleave between a read and a write:
 * 1. a compare-and-swap on the generation: the current generation's token moves the session to the
 *    next one; the token just replaced, within REFRESH_GRACE_MS of that, gets the same next generation
 *    (an app that sent two refreshes at once gets one working token, whichever answer it keeps);
 * 2. reuse: any older token, or the replaced one after the grace period, is a copy in someone else's
 *    hands: the session is deleted, and with it every token of that login.
 * Returns the rotated session (user and new generation) or whether the session was revoked.
 */
export async function rotateSession(
  db: Database,
  { sessionId, generation }: RefreshClaims,
  now: number,
): Promise<{ rotated?: { userId: number; generation: number }; revoked?: { userId: number } }> {
  const current = eq(sessions.generation, generation);
  const justReplaced = and(eq(sessions.generation, generation + 1), gt(sessions.rotatedAt, now - REFRESH_GRACE_MS));
  const [[rotated], [revoked]] = await db.batch([
    db
      .update(sessions)
      .set({
        generation: sql`CASE WHEN ${current} THEN ${generation + 1} ELSE ${sessions.generation} END`,
        rotatedAt: sql`CASE WHEN ${current} THEN ${now} ELSE ${sessions.rotatedAt} END`,
        lastUsedAt: now,
        expiresAt: sql`MIN(${now + SESSION_IDLE_MS}, ${sessions.createdAt} + ${SESSION_ABSOLUTE_MS})`,
      })
      .where(and(eq(sessions.id, sessionId), gt(sessions.expiresAt, now), sql`(${current} OR ${justReplaced})`))
      .returning({ userId: sessions.userId, generation: sessions.generation }),
    db
      .delete(sessions)
      .where(and(eq(sessions.id, sessionId), gt(sessions.generation, generation), sql`NOT (${justReplaced})`))
      .returning({ userId: sessions.userId }),
  ]);
  return { rotated, revoked };
}
