import { and, lt, lte } from "drizzle-orm";
import { loginFailures, sessions } from "./db/schema";
import { createLogger } from "./lib/log";
import type { Database } from "./types";

const DAY = 24 * 60 * 60 * 1000;
/** A run of failed logins nobody has added to for this long is forgotten (and its row deleted). */
const LOGIN_FAILURES_KEPT_MS = DAY;

/**
 * The cron trigger's work (`[triggers] crons` in wrangler.toml): deletes what has run out, in one batch.
 * Expired sessions already refuse their tokens; deleting them keeps the table to live logins.
 */
export async function cleanUp(db: Database, now: number): Promise<void> {
  const log = createLogger({ event_source: "scheduled" });
  const [expiredSessions, staleLoginFailures] = await db.batch([
    db.delete(sessions).where(lte(sessions.expiresAt, now)).returning({ id: sessions.id }),
    db
      .delete(loginFailures)
      .where(and(lte(loginFailures.lockedUntil, now), lt(loginFailures.lastAttemptAt, now - LOGIN_FAILURES_KEPT_MS)))
      .returning({ email: loginFailures.email }),
  ]);
  log.info("clean_up", { expiredSessions: expiredSessions.length, staleLoginFailures: staleLoginFailures.length });
}
