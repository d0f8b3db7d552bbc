import { and, eq, lte, sql, type AnyColumn } from "drizzle-orm";
import { deviceLoginFailures, loginFailures } from "../schema";
import type { Database } from "../../types";
import { DEVICE_FAILURES_BEFORE_LOCK, DEVICE_LOCK_MS, LOGIN_FAILURES_BEFORE_LOCK, LOGIN_LOCK_MS } from "../policy";

/**
 * The login lock: a run of attempts per address, or per device of the owner's (a valid device token, see
 * core/devices.ts), each claimed by one conditional upsert before the password or code is checked, so
 * someone who knows only an address cannot lock its owner out of the devices they use
 * (docs/security.md).
 */

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
  const { setWhere, ...set } = lockingCounterSql(
    loginFailures.failures,
    loginFailures.lockedUntil,
    LOGIN_FAILURES_BEFORE_LOCK,
    LOGIN_LOCK_MS,
    now,
  );
  return db
    .insert(loginFailures)
    .values({ email, failures: 1, lockedUntil: 0, lastAttemptAt: now })
    .onConflictDoUpdate({ target: loginFailures.email, set: { ...set, lastAttemptAt: now }, setWhere })
    .returning({ failures: loginFailures.failures, lockedUntil: loginFailures.lockedUntil });
}

/** The same rule for one device of its owner: its own failures only, DEVICE_FAILURES_BEFORE_LOCK of them. */
function claimDeviceLogin(db: Database, deviceId: string, now: number) {
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
  return db
    .delete(loginFailures)
    .where(and(eq(loginFailures.email, email), eq(loginFailures.lockedUntil, claimedLock)));
}

/** releaseLogin for a device's own run of attempts. */
function releaseDeviceLogin(db: Database, deviceId: string, claimedLock: number) {
  return db
    .delete(deviceLoginFailures)
    .where(and(eq(deviceLoginFailures.deviceId, deviceId), eq(deviceLoginFailures.lockedUntil, claimedLock)));
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
      lock: db
        .select({ lockedUntil: loginFailures.lockedUntil })
        .from(loginFailures)
        .where(eq(loginFailures.email, email)),
      lockMs: LOGIN_LOCK_MS,
      release: (claimedLock: number) => releaseLogin(db, email, claimedLock),
    };
  }
  return {
    claim: claimDeviceLogin(db, deviceId, now),
    lock: db
      .select({ lockedUntil: deviceLoginFailures.lockedUntil })
      .from(deviceLoginFailures)
      .where(eq(deviceLoginFailures.deviceId, deviceId)),
    lockMs: DEVICE_LOCK_MS,
    release: (claimedLock: number) => releaseDeviceLogin(db, deviceId, claimedLock),
  };
}
