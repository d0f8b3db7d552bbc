import { sql, type AnyColumn, type SQL } from "drizzle-orm";

/**
 * Per-account limits against guessing codes, spraying passwords and mail flooding. They live in D1
 * (strongly consistent) because they must be exact; the per-client limiter is the coarse outer layer.
 */
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** At least this long between two verification mails to one account. */
export const MAIL_COOLDOWN_MS = MINUTE;
/** At most this many verification mails (registration included) per account per hour. */
export const MAILS_PER_HOUR = 5;
/** At most this many failed verifications per account per hour, across codes. */
export const VERIFY_FAILURES_PER_HOUR = 15;
/** Consecutive failed logins that lock an address... */
export const LOGIN_FAILURES_BEFORE_LOCK = 10;
/** ...for this long. */
export const LOGIN_LOCK_MS = 15 * MINUTE;

/** A fixed one-hour window: `count` events since `start`; an hour after `start` it starts afresh. */
export interface Window {
  start: number;
  count: number;
}

function windowOpen(window: Window, now: number): boolean {
  return now - window.start < HOUR;
}

/** Milliseconds until the window has room for one more event, or 0 when it has room now. */
export function windowWait(window: Window, limit: number, now: number): number {
  return windowOpen(window, now) && window.count >= limit ? window.start + HOUR - now : 0;
}

/** Milliseconds until another verification mail may go to the account, or 0. */
export function mailWait(lastMailAt: number, window: Window, now: number): number {
  return Math.max(lastMailAt + MAIL_COOLDOWN_MS - now, windowWait(window, MAILS_PER_HOUR, now), 0);
}

/** The window after one more event at `now`. */
export function nextWindow(window: Window, now: number): Window {
  return windowOpen(window, now) ? { start: window.start, count: window.count + 1 } : { start: now, count: 1 };
}

/**
 * The same step as `nextWindow`, written as SQL so concurrent failures add up exactly: SQLite evaluates
 * every SET expression against the row as it was, so both columns see the old start.
 */
export function bumpWindowSql(start: AnyColumn, count: AnyColumn, now: number): { start: SQL; count: SQL } {
  const expired = sql`${now} - ${start} >= ${HOUR}`;
  return {
    start: sql`CASE WHEN ${expired} THEN ${now} ELSE ${start} END`,
    count: sql`CASE WHEN ${expired} THEN 1 ELSE ${count} + 1 END`,
  };
}
