import { and, eq, lte, sql, type AnyColumn, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { deviceLoginFailures, loginFailures, resetMailAllowances, users } from "../db/schema";
import type { Database } from "../types";
import { HOUR, KiB, MINUTE } from "../lib/units";

/**
 * Per-account limits against guessing codes, spraying passwords and mail flooding, each keyed so that
 * someone who knows only an address cannot turn it against the owner (address, device, session, request
 * or requesting client: see docs/security-lockout.md). They live in D1 (strongly consistent) because they
 * must be exact, and each is decided by the one conditional write that claims it, before any slow work:
 * concurrent requests cannot slip past a value read earlier. The per-client limiter is the coarse outer
 * layer.
 */

/** Accounts bodies are a few short fields; 16 KiB is far above any real one. */
export const AUTH_BODY_LIMIT_BYTES = 16 * KiB;

/** At least this long between two mails to one account (codes of any purpose, registration included). */
export const MAIL_COOLDOWN_MS = MINUTE;
/** At most this many such mails per account per hour. */
export const MAILS_PER_HOUR = 5;
/**
 * Reset mails (forgot-password) have an allowance of their own, apart from the account's other mails:
 * at most this many an hour to one address, whoever asks (the cap against mail-bombing)...
 */
export const RESET_MAILS_PER_HOUR = 5;
/**
 * ...and of those at most this many an hour, a MAIL_COOLDOWN_MS apart, for any one requesting client
 * (an IPv4 address or an IPv6 /64): one client cannot use up the owner's reset mails.
 */
export const RESET_MAILS_PER_CLIENT_PER_HOUR = 2;
/** The `client` of an address's own row in reset_mail_allowances. */
const WHOLE_ADDRESS = "*";
/** At most this many tries per account per hour at codes of one purpose, across codes. */
export const CODE_TRIES_PER_HOUR = 15;
/** Login attempts (failed, or still being checked) that lock an address... */
export const LOGIN_FAILURES_BEFORE_LOCK = 10;
/** ...for this long. */
export const LOGIN_LOCK_MS = 15 * MINUTE;
/**
 * Password re-checks of a session (change password or e-mail, delete the account) that may fail: the
 * wrong one that reaches this many ends the session. A stolen access token is no way to guess the
 * password, and no way to lock the owner out either (see account.ts).
 */
export const PASSWORD_CHECKS_PER_SESSION = 5;
/**
 * Wrong passwords after which a device of the owner (a valid device token, see devices.ts) is locked, for
 * DEVICE_LOCK_MS: a device is judged on its own failures, not on the address's.
 */
export const DEVICE_FAILURES_BEFORE_LOCK = 5;
export const DEVICE_LOCK_MS = 15 * MINUTE;

/**
 * E-mail change codes mailed to one target address in an hour, whatever the number of accounts asking:
 * the service cannot be used to flood an outside mailbox with codes.
 */
export const EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR = 3;
/**
 * Wrong tries at proving one target address (confirm-email-change) in an hour, all accounts together:
 * below the 3 codes × 5 tries the codes alone would allow, so five accounts asking for one address do
 * not get five times the guesses.
 */
export const EMAIL_CHANGE_TRIES_PER_TARGET_PER_HOUR = 10;

/** A fixed window (an hour unless said otherwise): `count` events since `start`; it starts afresh after its length. */
export interface Window {
  start: number;
  count: number;
}

/** Milliseconds until the window has room for one more event, or 0 when it has room now. */
export function windowWait(window: Window, limit: number, now: number, length = HOUR): number {
  return now - window.start < length && window.count >= limit ? window.start + length - now : 0;
}

/** Milliseconds until another mail may go to the account, or 0. */
export function mailWait(lastMailAt: number, window: Window, now: number): number {
  return Math.max(lastMailAt + MAIL_COOLDOWN_MS - now, windowWait(window, MAILS_PER_HOUR, now), 0);
}

/**
 * One more event in a window, as SQL for a SET clause, and the condition that the window has room for it.
 * SQLite evaluates every SET expression against the row as it was, so both columns see the old start.
 */
export function claimWindowSql(start: AnyColumn, count: AnyColumn, limit: number, now: number, length = HOUR): { start: SQL; count: SQL; hasRoom: SQL } {
  const expired = sql`${now} - ${start} >= ${length}`;
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
 * A run of failed attempts that locks what it counts, as the SET and WHERE of one upsert: the claim that
 * reaches `limit` sets the lock itself, a running lock refuses the claim (no row returned), and a lock that
 * has run out starts a new count. Used for an address (the login lock) and for a device (see devices.ts).
 */
function lockingCounterSql(failures: AnyColumn, lockedUntil: AnyColumn, limit: number, lockMs: number, now: number) {
  const expiredLock = sql`${lockedUntil} <> 0`; // the WHERE below rules out a running lock
  const attempts = sql`CASE WHEN ${expiredLock} THEN 1 ELSE ${failures} + 1 END`;
  return {
    failures: attempts,
    lockedUntil: sql`CASE WHEN ${attempts} >= ${limit} THEN ${now + lockMs} ELSE 0 END`,
    setWhere: lte(lockedUntil, now),
  };
}

/**
 * Claims one login attempt for `email` before its password is checked. Refused (no row returned) while
 * the address is locked; the claim that reaches LOGIN_FAILURES_BEFORE_LOCK sets the lock itself, so
 * however requests interleave, at most that many passwords are checked per address per lock period.
 * A lock that has run out starts a new count. The row returned holds the lock as this claim left it,
 * which is what a successful login may release (see releaseLogin).
 */
export function claimLogin(db: Database, email: string, now: number) {
  const { setWhere, ...set } = lockingCounterSql(loginFailures.failures, loginFailures.lockedUntil, LOGIN_FAILURES_BEFORE_LOCK, LOGIN_LOCK_MS, now);
  return db
    .insert(loginFailures)
    .values({ email, failures: 1, lockedUntil: 0, lastAttemptAt: now })
    .onConflictDoUpdate({ target: loginFailures.email, set: { ...set, lastAttemptAt: now }, setWhere })
    .returning({ failures: loginFailures.failures, lockedUntil: loginFailures.lockedUntil });
}

/** The same rule for one device of its owner: its own failures only, DEVICE_FAILURES_BEFORE_LOCK of them. */
export function claimDeviceLogin(db: Database, deviceId: string, now: number) {
  const { setWhere, ...set } = lockingCounterSql(
    deviceLoginFailures.failures,
    deviceLoginFailures.lockedUntil,
    DEVICE_FAILURES_BEFORE_LOCK,
    DEVICE_LOCK_MS,
    now,
  );
  return db
    .insert(deviceLoginFailures)
    .values({ deviceId, failures: 1, lockedUntil: 0, lastAttemptAt: now })
    .onConflictDoUpdate({ target: deviceLoginFailures.deviceId, set: { ...set, lastAttemptAt: now }, setWhere })
    .returning({ failures: deviceLoginFailures.failures, lockedUntil: deviceLoginFailures.lockedUntil });
}

/**
 * After the right password: ends the run of attempts, unless a lock newer than the claim's (set by a
 * concurrent attempt since) is in place; that lock stays for its whole period.
 */
export function releaseLogin(db: Database, email: string, claimedLock: number) {
  return db.delete(loginFailures).where(and(eq(loginFailures.email, email), eq(loginFailures.lockedUntil, claimedLock)));
}

/** releaseLogin for a device's own run of attempts. */
export function releaseDeviceLogin(db: Database, deviceId: string, claimedLock: number) {
  return db.delete(deviceLoginFailures).where(and(eq(deviceLoginFailures.deviceId, deviceId), eq(deviceLoginFailures.lockedUntil, claimedLock)));
}

/**
 * The run of attempts a login is judged on: its device's own, when it came with a valid device token of
 * the address (see devices.ts), else the address's. `claim` and `lock` go into the login's first batch;
 * `release` is for a right password, with the lock the claim returned.
 */
export function loginCounter(db: Database, email: string, deviceId: string | undefined, now: number) {
  if (deviceId === undefined) {
    return {
      claim: claimLogin(db, email, now),
      lock: db.select({ lockedUntil: loginFailures.lockedUntil }).from(loginFailures).where(eq(loginFailures.email, email)),
      lockMs: LOGIN_LOCK_MS,
      release: (claimedLock: number) => releaseLogin(db, email, claimedLock),
    };
  }
  return {
    claim: claimDeviceLogin(db, deviceId, now),
    lock: db.select({ lockedUntil: deviceLoginFailures.lockedUntil }).from(deviceLoginFailures).where(eq(deviceLoginFailures.deviceId, deviceId)),
    lockMs: DEVICE_LOCK_MS,
    release: (claimedLock: number) => releaseDeviceLogin(db, deviceId, claimedLock),
  };
}

/**
 * Claims one reset mail to `email` for the request `claim` (a unique id) from `client`, as two statements
 * for one batch: the address's row first, only when the address has an account, the address has room
 * and the client has room (cooldown and hourly cap); then the client's row, only if the first claim was
 * this request's. Batch what the claim pays for after them, under `resetMailClaimed(email, claim)`.
 */
export function claimResetMail(db: Database, email: string, client: string, claim: string, now: number) {
  // Read inside the upsert of the address's row of the same table: under a name of its own.
  const clientRow = alias(resetMailAllowances, "client_allowance");
  const clientWindow = claimWindowSql(clientRow.windowStart, clientRow.mailsInWindow, RESET_MAILS_PER_CLIENT_PER_HOUR, now);
  const clientHasRoom = sql`NOT EXISTS (SELECT 1 FROM ${resetMailAllowances} AS ${sql.identifier("client_allowance")} WHERE ${and(
    eq(clientRow.email, email),
    eq(clientRow.client, client),
  )} AND NOT (${clientRow.lastMailAt} <= ${now - MAIL_COOLDOWN_MS} AND ${clientWindow.hasRoom}))`;
  const row = (key: string) =>
    db
      .select({
        // Every column, in the table's order (drizzle's rule for INSERT … SELECT).
        email: sql<string>`${email}`.as("email"),
        client: sql<string>`${key}`.as("client"),
        lastMailAt: sql<number>`${now}`.as("last_mail_at"),
        windowStart: sql<number>`${now}`.as("window_start"),
        mailsInWindow: sql<number>`1`.as("mails_in_window"),
        claim: sql<string>`${claim}`.as("claim"),
      })
      .from(users);
  const claimed = (key: string, limit: number, condition: SQL) => {
    const window = claimWindowSql(resetMailAllowances.windowStart, resetMailAllowances.mailsInWindow, limit, now);
    return {
      target: [resetMailAllowances.email, resetMailAllowances.client],
      set: { lastMailAt: now, windowStart: window.start, mailsInWindow: window.count, claim },
      setWhere: and(window.hasRoom, condition),
    };
  };
  const ours = resetMailClaimed(email, claim);
  return [
    db
      .insert(resetMailAllowances)
      .select(row(WHOLE_ADDRESS).where(and(eq(users.email, email), clientHasRoom)))
      .onConflictDoUpdate(claimed(WHOLE_ADDRESS, RESET_MAILS_PER_HOUR, clientHasRoom)),
    db
      .insert(resetMailAllowances)
      .select(row(client).where(and(eq(users.email, email), ours)))
      .onConflictDoUpdate(claimed(client, RESET_MAILS_PER_CLIENT_PER_HOUR, ours)),
  ] as const;
}

/** The condition that the reset mail to `email` was claimed by the request `claim` (see claimResetMail). */
export function resetMailClaimed(email: string, claim: string): SQL {
  return sql`EXISTS (SELECT 1 FROM ${resetMailAllowances} WHERE ${and(
    eq(resetMailAllowances.email, email),
    eq(resetMailAllowances.client, WHOLE_ADDRESS),
    eq(resetMailAllowances.claim, claim),
  )})`;
}

/** The reset-mail allowance rows of `email`: the address's and the client's (see claimResetMail). */
export function resetMailAllowance(db: Database, email: string, client: string) {
  return db
    .select({
      client: resetMailAllowances.client,
      lastMailAt: resetMailAllowances.lastMailAt,
      start: resetMailAllowances.windowStart,
      count: resetMailAllowances.mailsInWindow,
    })
    .from(resetMailAllowances)
    .where(and(eq(resetMailAllowances.email, email), sql`${resetMailAllowances.client} IN (${WHOLE_ADDRESS}, ${client})`));
}

export type ResetMailSkipped = "client_cooldown" | "client_hourly_cap" | "address_hourly_cap";

/**
 * Which part of the reset-mail allowance held a mail back, and for how long, from the rows as the claim
 * left them. A claim lost to a concurrent request of the same client counts as that client's cooldown.
 */
export function resetMailWait(
  rows: Array<{ client: string; lastMailAt: number } & Window>,
  client: string,
  now: number,
): { reason: ResetMailSkipped; waitMs: number } {
  const ofClient = rows.find((row) => row.client === client);
  const ofAddress = rows.find((row) => row.client === WHOLE_ADDRESS);
  const clientCap = ofClient ? windowWait(ofClient, RESET_MAILS_PER_CLIENT_PER_HOUR, now) : 0;
  const addressCap = ofAddress ? windowWait(ofAddress, RESET_MAILS_PER_HOUR, now) : 0;
  if (clientCap > 0) return { reason: "client_hourly_cap", waitMs: clientCap };
  if (addressCap > 0) return { reason: "address_hourly_cap", waitMs: addressCap };
  const cooldown = ofClient ? ofClient.lastMailAt + MAIL_COOLDOWN_MS - now : 0;
  return { reason: "client_cooldown", waitMs: Math.max(cooldown, 0) || MAIL_COOLDOWN_MS };
}
