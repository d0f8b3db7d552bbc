import { and, eq, lt, lte, ne, sql } from "drizzle-orm";
import type { AuditTrail } from "../audit/events";
import {
  deploymentWindows,
  deviceLoginFailures,
  emailChangeReverts,
  loginFailures,
  mfaChallenges,
  oauthLoginCodes,
  oauthStates,
  oneTimeCodes,
  passkeyChallenges,
  resetMailAllowances,
  resetRequests,
  sessions,
  users,
} from "./schema";
import { DAY, HOUR } from "../lib/units";
import type { Database } from "../types";
import { LOGIN_FAILURES_KEPT_MS, UNVERIFIED_ACCOUNT_TTL_MS } from "./policy";

/**
 * The accounts area's share of the hourly clean-up (scheduled.ts), by name: each statement deletes what
 * has run out and returns a row for each, so the cron can log how many. Expired sessions and codes already
 * refuse their tokens; deleting them keeps the tables small.
 */
export function authCleanUp(db: Database, now: number, audit: AuditTrail) {
  const unverified = and(eq(users.isVerified, false), lt(users.createdAt, now - UNVERIFIED_ACCOUNT_TTL_MS));
  return {
    expiredSessions: db.delete(sessions).where(lte(sessions.expiresAt, now)).returning({ id: sessions.id }),
    staleLoginFailures: db
      .delete(loginFailures)
      .where(and(lte(loginFailures.lockedUntil, now), lt(loginFailures.lastAttemptAt, now - LOGIN_FAILURES_KEPT_MS)))
      .returning({ email: loginFailures.email }),
    staleDeviceFailures: db
      .delete(deviceLoginFailures)
      .where(
        and(
          lte(deviceLoginFailures.lockedUntil, now),
          lt(deviceLoginFailures.lastAttemptAt, now - LOGIN_FAILURES_KEPT_MS),
        ),
      )
      .returning({ deviceId: deviceLoginFailures.deviceId }),
    // Kept an hour past their expiry, for the hourly cap on tries; a verification code lives as long as
    // its unverified account, whose resends it counts.
    expiredCodes: db
      .delete(oneTimeCodes)
      .where(and(ne(oneTimeCodes.purpose, "verify_email"), lt(oneTimeCodes.expiresAt, now - HOUR)))
      .returning({ userId: oneTimeCodes.userId }),
    // Each request's code counts only its own tries: nothing to keep once it has expired.
    expiredResetRequests: db
      .delete(resetRequests)
      .where(lte(resetRequests.expiresAt, now))
      .returning({ id: resetRequests.id }),
    // An allowance whose hour is over holds nothing a new request would not start afresh.
    staleResetAllowances: db
      .delete(resetMailAllowances)
      .where(lt(resetMailAllowances.windowStart, now - HOUR))
      .returning({ email: resetMailAllowances.email }),
    // Recorded before they go, the system's `user.deleted` each.
    unverifiedAccountEvents: audit.recordEach(
      "user.deleted",
      sql`SELECT ${users.id} AS user_id, json_object('email', ${users.email}, 'reason', 'unverified') AS data FROM ${users} WHERE ${unverified}`,
    ),
    // Their codes go with them (ON DELETE CASCADE); an unverified account has no sessions or notes.
    unverifiedAccounts: db.delete(users).where(unverified).returning({ id: users.id }),
    // No named window is longer than a day (limits/windows.ts): one older than that counts nothing.
    staleWindows: db
      .delete(deploymentWindows)
      .where(lt(deploymentWindows.windowStart, now - DAY))
      .returning({ name: deploymentWindows.name }),
    expiredEmailChangeReverts: db
      .delete(emailChangeReverts)
      .where(lte(emailChangeReverts.expiresAt, now))
      .returning({ userId: emailChangeReverts.userId }),
    // A second-factor challenge past its five minutes can no longer be answered.
    expiredMfaChallenges: db
      .delete(mfaChallenges)
      .where(lte(mfaChallenges.expiresAt, now))
      .returning({ userId: mfaChallenges.userId }),
    // A passkey challenge past its five minutes can no longer be claimed (sign-in options leave one each).
    expiredPasskeyChallenges: db
      .delete(passkeyChallenges)
      .where(lte(passkeyChallenges.expiresAt, now))
      .returning({ challenge: passkeyChallenges.challenge }),
    // Social sign-in's states (10 minutes) and login codes (60 seconds) that nobody came back with.
    expiredOAuthStates: db
      .delete(oauthStates)
      .where(lte(oauthStates.expiresAt, now))
      .returning({ provider: oauthStates.provider }),
    expiredOAuthLoginCodes: db
      .delete(oauthLoginCodes)
      .where(lte(oauthLoginCodes.expiresAt, now))
      .returning({ userId: oauthLoginCodes.userId }),
  };
}
