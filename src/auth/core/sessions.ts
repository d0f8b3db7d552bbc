import { and, desc, eq, gt, ne, sql, type SQL } from "drizzle-orm";
import { sessions, users } from "../schema";
import { ACCESS_TOKEN_TTL_SECONDS, signAccessToken, type AccessClaims } from "../../lib/access-token";
import type { AuditTrail } from "../../audit/events";
import type { Logger } from "../../lib/log";
import { randomId } from "../../lib/crypto";
import { refreshTokenFor, type RefreshClaims } from "../../lib/refresh-token";
import type { AppEnv, Database } from "../../types";
import { callerSession, liveSession, sessionCheck, type CallerRef } from "../caller";
import { notSuspended } from "./accounts";
import type { TokensJson } from "../shapes";
import { REFRESH_GRACE_MS, SESSION_ABSOLUTE_MS, SESSION_IDLE_MS, USER_AGENT_CHARS } from "../policy";

/**
 * Server-side sessions: one per sign-in, checked wherever an access token is. The only SQL of `sessions`' lifecycle.
 */

/** The User-Agent as a session shows it: control characters out, white space folded, at most 200 characters. */
export function shortUserAgent(header: string | undefined): string | null {
  const text = (header ?? "").replace(/[\p{C}\s]+/gu, " ").trim();
  return text === "" ? null : [...text].slice(0, USER_AGENT_CHARS).join("");
}

/**
 * What a new session is opened for: the account, its sign-in epoch as the proof read it, and how the user signed in.
 */
export interface NewSession {
  userId: number;
  signInEpoch: number;
  amr: string;
  /** What the method knows beyond `amr` (gate.ts, SignInDetail), as JSON; null when nothing. */
  detail: string | null;
  userAgent: string | null;
}

/**
 * A new session, whose id is the access token's `sid`: created only while the account's sign-in epoch is
 * still the one the proof read, so a sign-in racing a password reset or change, or the deletion of the
 * account, starts no session (and hits no foreign key), and only while the account is not suspended, read in
 * this same statement, so a ban committed before it leaves no session behind. Returns nothing then.
 */
export function createSession(db: Database, session: NewSession, now: number) {
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
          userAgent: sql<string | null>`${session.userAgent}`.as("user_agent"),
          passwordFailures: sql<number>`0`.as("password_failures"),
          amr: sql<string>`${session.amr}`.as("amr"),
          detail: sql<string | null>`${session.detail}`.as("detail"),
        })
        .from(users)
        .where(and(eq(users.id, session.userId), eq(users.signInEpoch, session.signInEpoch), notSuspended(now))),
    )
    .returning({ id: sessions.id });
  return { id, query };
}

/** The condition that session `id` exists (a statement after its INSERT: it was opened). */
export function sessionExists(id: string): SQL {
  return sql`EXISTS (SELECT 1 FROM ${sessions} WHERE ${sessions.id} = ${id})`;
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
  { db }: SessionEnding,
  audit: AuditTrail,
  { sessionId, generation }: RefreshClaims,
  now: number,
): Promise<{ rotated?: { userId: number; generation: number }; revoked?: { userId: number } }> {
  const current = eq(sessions.generation, generation);
  const justReplaced = and(eq(sessions.generation, generation + 1), gt(sessions.rotatedAt, now - REFRESH_GRACE_MS));
  const reused = and(eq(sessions.id, sessionId), gt(sessions.generation, generation), sql`NOT (${justReplaced})`);
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
    // The revocation is read, and recorded, under the very condition of its DELETE, just before it.
    db.select({ userId: sessions.userId }).from(sessions).where(reused),
    ...audit.record(
      {
        type: "session.revoked",
        userId: sql`(SELECT ${sessions.userId} FROM ${sessions} WHERE ${reused})`,
        actor: "system",
        data: { session_ids: [sessionId], reason: "refresh_token_reused" },
      },
      sql`EXISTS (SELECT 1 FROM ${sessions} WHERE ${reused})`,
    ),
    db.delete(sessions).where(reused),
  ]);
  return { rotated, revoked };
}

/** The caller's live sessions, the most recently signed in or refreshed first; undefined when the caller's own session is not live. */
export async function listSessions(db: Database, caller: AccessClaims, now: number) {
  const [[live], list] = await db.batch([
    sessionCheck(db, caller, now),
    db
      .select()
      .from(sessions)
      .where(and(eq(sessions.userId, caller.userId), gt(sessions.expiresAt, now)))
      .orderBy(desc(sessions.lastUsedAt), desc(sessions.createdAt)),
  ]);
  return live ? list : undefined;
}

/** Ends the caller's own session (logout): false when it was not live. */
export async function endSession({ db }: SessionEnding, caller: AccessClaims, now: number): Promise<boolean> {
  const [ended] = await db.delete(sessions).where(callerSession(caller, now)).returning({ id: sessions.id });
  return ended !== undefined;
}

/**
 * Ends the caller's session `id`, while the caller's own is live: whether the caller's was live, and whether `id`
 * ended.
 */
export async function endSessionById(
  { db }: SessionEnding,
  audit: AuditTrail,
  caller: AccessClaims,
  id: string,
  now: number,
): Promise<{ live: boolean; ended: boolean }> {
  const ends = and(eq(sessions.id, id), eq(sessions.userId, caller.userId), liveSession(caller, now));
  // Read, and recorded, under the very condition of the DELETE, just before it.
  const [[live], [ended]] = await db.batch([
    sessionCheck(db, caller, now),
    db.select({ id: sessions.id }).from(sessions).where(ends),
    ...audit.record(
      { type: "session.revoked", userId: caller.userId, data: { session_ids: [id], reason: "signed_out" } },
      sql`EXISTS (SELECT 1 FROM ${sessions} WHERE ${ends})`,
    ),
    db.delete(sessions).where(ends),
  ]);
  return { live: live !== undefined, ended: ended !== undefined };
}

/** Ends every other session of the caller, while the caller's is live, with their event: false when it was not. */
export async function endOtherSessionsNow(
  ending: SessionEnding,
  audit: AuditTrail,
  caller: AccessClaims,
  now: number,
): Promise<boolean> {
  const { db } = ending;
  const others = and(eq(sessions.userId, caller.userId), ne(sessions.id, caller.sessionId), liveSession(caller, now));
  const [[live]] = await db.batch([
    sessionCheck(db, caller, now),
    ...audit.record(
      {
        type: "session.revoked",
        userId: caller.userId,
        data: {
          session_ids: sql`json((SELECT json_group_array(${sessions.id}) FROM ${sessions} WHERE ${others}))`,
          reason: "signed_out",
        },
      },
      sql`EXISTS (SELECT 1 FROM ${sessions} WHERE ${others})`,
    ),
    ending.others(caller, liveSession(caller, now)),
  ]);
  return live !== undefined;
}

/**
 * What ends sessions. Only the door below hands one out, so a write that ends sessions cannot forget to tell
 * whoever holds sessions beyond one request (the live sockets): every statement that deletes sessions, and
 * every write that deletes an account (its sessions go with it), takes one.
 */
class SessionEnding {
  constructor(readonly db: Database) {}

  /** The statement that ends every session of the account, when `condition` holds: for a batch. */
  all(userId: number | SQL, condition?: SQL) {
    return this.db.delete(sessions).where(and(eq(sessions.userId, userId), condition));
  }

  /** The statement that ends every session of the caller's account but the caller's, when `condition` holds. */
  others(caller: CallerRef, condition?: SQL) {
    return this.db
      .delete(sessions)
      .where(and(eq(sessions.userId, caller.userId), ne(sessions.id, caller.sessionId), condition));
  }

  /** The statement that ends the caller's own session, when `condition` holds. */
  own(caller: CallerRef, condition?: SQL) {
    return this.db
      .delete(sessions)
      .where(and(eq(sessions.id, caller.sessionId), eq(sessions.userId, caller.userId), condition));
  }
}
export type { SessionEnding };

/**
 * The one door sessions end by: `write` runs with what ends them (a SessionEnding), and once it has committed,
 * `endedFor` names the account whose sessions it ended (false or undefined when none did), whose live sockets
 * then re-check theirs (after the answer: the area's `sessionsEnded`, area.ts).
 */
export async function endSessions<R>(
  c: { var: Pick<AppEnv["Variables"], "db" | "sessionsEnded"> },
  write: (ending: SessionEnding) => Promise<R>,
  endedFor: (result: R) => number | false | undefined,
): Promise<R> {
  const result = await write(new SessionEnding(c.var.db));
  const userId = endedFor(result);
  if (typeof userId === "number") c.var.sessionsEnded(userId);
  return result;
}

/** The answer of a login and of a refresh: the spec's `token`, and the refresh token beside it. */
export async function sessionTokens(
  caller: AccessClaims,
  generation: number,
  secret: string,
  log: Logger,
): Promise<TokensJson> {
  const [token, refreshToken] = await Promise.all([
    signAccessToken(caller, secret, log),
    refreshTokenFor({ sessionId: caller.sessionId, generation }, secret),
  ]);
  return { token, refresh_token: refreshToken, expires_in: ACCESS_TOKEN_TTL_SECONDS };
}
