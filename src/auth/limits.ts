import { and, eq, lte, sql, type AnyColumn, type SQL } from "drizzle-orm";
import { loginFailures, users } from "../db/schema";
import type { Database } from "../types";

/**
 * Per-account limits against guessing codes, spraying passwords and mail flooding. They live in D1
 * (strongly consistent) because they must be exact, and each is decided by the one conditional write
 * that claims it, before any slow work: concurrent requests cannot slip past a value read earlier. The
 * per-client limiter is the coarse outer layer.
 */
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** At least this long between two mails to one account (codes of any purpose, registration included). */
export const MAIL_COOLDOWN_MS = MINUTE;
/** At most this many such mails per account per hour. */
export const MAILS_PER_HOUR = 5;
/** At most this many tries per account per hour at codes of one purpose, across codes. */
export const CODE_TRIES_PER_HOUR = 15;
/** Login attempts (failed, or still being checked) that lock an address... */
export const LOGIN_FAILURES_BEFORE_LOCK = 10;
/** ...for this long. */
export const LOGIN_LOCK_MS = 15 * MINUTE;

/** A fixed one-hour window: `count` events since `start`; an hour after `start` it starts afresh. */
export interface Window {
  start: number;
  count: number;
}

/** Milliseconds until the window has room for one more event, or 0 when it has room now. */
export function windowWait(window: Window, limit: number, now: number): number {
  return now - window.start < HOUR && window.count >= limit ? window.start + HOUR - now : 0;
}

/** Milliseconds until another mail may go to the account, or 0. */
export function mailWait(lastMailAt: number, window: Window, now: number): number {
  return Math.max(lastMailAt + MAIL_COOLDOWN_MS - now, windowWait(window, MAILS_PER_HOUR, now), 0);
}

/**
 * One more event in a window, as SQL for a SET clause, and the condition that the window has room for it.
 * SQLite evaluates every SET expression against the row as it was, so both columns see the old start.
 */
export function claimWindowSql(start: AnyColumn, count: AnyColumn, limit: number, now: number): { start: SQL; count: SQL; hasRoom: SQL } {
  const expired = sql`${now} - ${start} >= ${HOUR}`;
  return {
    start: sql`CASE WHEN ${expired} THEN ${now} ELSE ${start} END`,
    count: sql`CASE WHEN ${expired} THEN 1 ELSE ${count} + 1 END`,
    hasRoom: sql`(${expired} OR ${count} < ${limit})`,
  };
}

/**
 * Claims one mail of the account's allowance (cooldown and hourly cap) for the accounts `where` selects:
 * one conditional UPDATE, so of concurrent requests at most the allowance gets through. Returns the id
 * of the account when the mail may be sent, nothing when it may not.
 */
export function claimMail(db: Database, where: SQL | undefined, now: number) {
  const window = claimWindowSql(users.mailWindowStart, users.mailsInWindow, MAILS_PER_HOUR, now);
  return db
    .update(users)
    .set({ lastMailAt: now, mailWindowStart: window.start, mailsInWindow: window.count })
    .where(and(where, lte(users.lastMailAt, now - MAIL_COOLDOWN_MS), window.hasRoom))
    .returning({ id: users.id });
}

/**
 * Claims one login attempt for `email` before its password is checked. Refused (no row returned) while
 * the address is locked; the claim that reaches LOGIN_FAILURES_BEFORE_LOCK sets the lock itself, so
 * however requests interleave, at most that many passwords are checked per address per lock period.
 * A lock that has run out starts a new count. The row returned holds the lock as this claim left it,
 * which is what a successful login may release (see releaseLogin).
 */
export function claimLogin(db: Database, email: string, now: number) {
  const expiredLock = sql`${loginFailures.lockedUntil} <> 0`; // the WHERE below rules out a running lock
  const attempts = sql`CASE WHEN ${expiredLock} THEN 1 ELSE ${loginFailures.failures} + 1 END`;
  return db
    .insert(loginFailures)
    .values({ email, failures: 1, lockedUntil: 0, lastAttemptAt: now })
    .onConflictDoUpdate({
      target: loginFailures.email,
      set: {
        failures: attempts,
        lockedUntil: sql`CASE WHEN ${attempts} >= ${LOGIN_FAILURES_BEFORE_LOCK} THEN ${now + LOGIN_LOCK_MS} ELSE 0 END`,
        lastAttemptAt: now,
      },
      setWhere: lte(loginFailures.lockedUntil, now),
    })
    .returning({ failures: loginFailures.failures, lockedUntil: loginFailures.lockedUntil });
}

/**
 * After the right password: ends the run of attempts, unless a lock newer than the claim's (set by a
 * concurrent attempt since) is in place; that lock stays for its whole period.
 */
export function releaseLogin(db: Database, email: string, claimedLock: number) {
  return db.delete(loginFailures).where(and(eq(loginFailures.email, email), eq(loginFailures.lockedUntil, claimedLock)));
}
