import { and, eq, lt, lte, ne, sql } from "drizzle-orm";
import { deploymentWindows, deviceLoginFailures, emailChangeReverts, idempotencyKeys, mfaChallenges, noteClocks, noteTombstones, loginFailures, oneTimeCodes, resetMailAllowances, resetRequests, sessions, users } from "./db/schema";
import { TOMBSTONES_KEPT_MS } from "./notes/changes";
import { IDEMPOTENCY_KEY_TTL_MS } from "./notes/idempotency";
import { createLogger } from "./lib/log";
import type { Database } from "./types";
import { DAY, HOUR } from "./lib/units";

/** An account still unverified this long after registering is deleted, and its address is free again. */
export const UNVERIFIED_ACCOUNT_TTL_MS = 7 * DAY;
/** A run of failed logins nobody has added to for this long is forgotten (and its row deleted). */
const LOGIN_FAILURES_KEPT_MS = DAY;

/**
 * The cron trigger's work (`[triggers] crons` in wrangler.toml): deletes what has run out, in one batch.
 * Expired sessions and codes already refuse their tokens; deleting them keeps the tables small.
 */
export async function cleanUp(db: Database, now: number): Promise<void> {
  const log = createLogger({ event_source: "scheduled" });
  const [expiredSessions, staleLogins, staleDevices, usedUpCodes, expiredResets, staleResetMails, unverifiedAccounts, expiredIdempotencyKeys, staleWindows, expiredReverts, , prunedTombstones, expiredChallenges] =
    await db.batch([
    db.delete(sessions).where(lte(sessions.expiresAt, now)).returning({ id: sessions.id }),
    db
      .delete(loginFailures)
      .where(and(lte(loginFailures.lockedUntil, now), lt(loginFailures.lastAttemptAt, now - LOGIN_FAILURES_KEPT_MS)))
      .returning({ email: loginFailures.email }),
    db
      .delete(deviceLoginFailures)
      .where(and(lte(deviceLoginFailures.lockedUntil, now), lt(deviceLoginFailures.lastAttemptAt, now - LOGIN_FAILURES_KEPT_MS)))
      .returning({ deviceId: deviceLoginFailures.deviceId }),
    // Kept an hour past their expiry, for the hourly cap on tries; a verification code lives as long as
    // its unverified account, whose resends it counts.
    db
      .delete(oneTimeCodes)
      .where(and(ne(oneTimeCodes.purpose, "verify_email"), lt(oneTimeCodes.expiresAt, now - HOUR)))
      .returning({ userId: oneTimeCodes.userId }),
    // Each request's code counts only its own tries: nothing to keep once it has expired.
    db.delete(resetRequests).where(lte(resetRequests.expiresAt, now)).returning({ id: resetRequests.id }),
    // An allowance whose hour is over holds nothing a new request would not start afresh.
    db.delete(resetMailAllowances).where(lt(resetMailAllowances.windowStart, now - HOUR)).returning({ email: resetMailAllowances.email }),
    // Their codes go with them (ON DELETE CASCADE); an unverified account has no sessions or notes.
    db
      .delete(users)
      .where(and(eq(users.isVerified, false), lt(users.createdAt, now - UNVERIFIED_ACCOUNT_TTL_MS)))
      .returning({ id: users.id }),
    // A request repeating an expired key creates a new note anyway (see notes/idempotency.ts).
    db
      .delete(idempotencyKeys)
      .where(lte(idempotencyKeys.createdAt, now - IDEMPOTENCY_KEY_TTL_MS))
      .returning({ id: idempotencyKeys.id }),
    // No named window is longer than a day (auth/windows.ts): one older than that counts nothing.
    db.delete(deploymentWindows).where(lt(deploymentWindows.windowStart, now - DAY)).returning({ name: deploymentWindows.name }),
    db.delete(emailChangeReverts).where(lte(emailChangeReverts.expiresAt, now)).returning({ userId: emailChangeReverts.userId }),
    // Tombstones older than TOMBSTONES_KEPT_MS go; each owner's clock remembers how far, so that a changes
    // cursor from before then is refused (410) instead of silently missing the deletions.
    db
      .update(noteClocks)
      .set({ prunedThrough: sql`max(${noteClocks.prunedThrough}, (SELECT max(${noteTombstones.seq}) FROM ${noteTombstones} WHERE ${and(eq(noteTombstones.owner, noteClocks.owner), lt(noteTombstones.deletedAt, now - TOMBSTONES_KEPT_MS))}))` })
      .where(sql`EXISTS (SELECT 1 FROM ${noteTombstones} WHERE ${and(eq(noteTombstones.owner, noteClocks.owner), lt(noteTombstones.deletedAt, now - TOMBSTONES_KEPT_MS))})`),
    db.delete(noteTombstones).where(lt(noteTombstones.deletedAt, now - TOMBSTONES_KEPT_MS)).returning({ seq: noteTombstones.seq }),
    // A second-factor challenge past its five minutes can no longer be answered.
    db.delete(mfaChallenges).where(lte(mfaChallenges.expiresAt, now)).returning({ userId: mfaChallenges.userId }),
  ]);
  log.info("clean_up", {
    expiredSessions: expiredSessions.length,
    staleLoginFailures: staleLogins.length,
    staleDeviceFailures: staleDevices.length,
    expiredCodes: usedUpCodes.length,
    expiredResetRequests: expiredResets.length,
    staleResetAllowances: staleResetMails.length,
    unverifiedAccounts: unverifiedAccounts.length,
    expiredIdempotencyKeys: expiredIdempotencyKeys.length,
    staleWindows: staleWindows.length,
    expiredEmailChangeReverts: expiredReverts.length,
    prunedTombstones: prunedTombstones.length,
    expiredMfaChallenges: expiredChallenges.length,
  });
}
