import { and, eq, lt, or, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { orderedPage } from "../db/client";
import { writeCursor } from "../lib/pages";
import type { Database } from "../types";
import { auditEvents, failedSignInWindows } from "./schema";
import type { AuditEventJson } from "./shapes";
import { FAILED_SIGN_IN_WINDOW_MS } from "./policy";

/** The SQL of reading the audit log (writing it is writer.ts's), and its share of the cron's clean-up. */

type EventRow = typeof auditEvents.$inferSelect;

export function eventJson(row: EventRow): AuditEventJson {
  const data = JSON.parse(row.data) as Record<string, unknown>;
  return {
    id: row.id,
    type: row.type,
    user_id: row.userId,
    actor: row.actor,
    at: new Date(row.at).toISOString(),
    ip: row.ip,
    user_agent: row.userAgent,
    data,
  };
}

/**
 * A page of events matching `filter`, newest first (then by id), after the cursor's event; `limit` of them and one
 * more (whether a next page follows).
 */
export function eventsPage(
  db: Database,
  filter: SQL | undefined,
  page: { after?: readonly [number, string]; limit: number },
) {
  const { after, limit } = page;
  const older =
    after === undefined
      ? undefined
      : or(lt(auditEvents.at, after[0]), and(eq(auditEvents.at, after[0]), lt(auditEvents.id, after[1])));
  return db
    .select()
    .from(auditEvents)
    .where(and(filter, older))
    .orderBy(orderedPage(limit, sql`${auditEvents.at} DESC`, sql`${auditEvents.id} DESC`));
}

/** The answer of a page: its events, and the cursor of the next page (null for the last). */
export function eventsAnswer(rows: EventRow[], limit: number) {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    events: page.map(eventJson),
    next_cursor: rows.length > limit && last ? writeCursor([last.at, last.id]) : null,
  };
}

/**
 * The audit log's share of the hourly clean-up (scheduled.ts): events older than AUDIT_RETENTION_DAYS (their webhook
 * deliveries, failed ones included, go with them), and failed sign-in windows past their hour.
 */
export function auditCleanUp(db: Database, now: number, retentionMs: number): Record<string, BatchItem<"sqlite">> {
  return {
    expiredAuditEvents: db
      .delete(auditEvents)
      .where(lt(auditEvents.at, now - retentionMs))
      .returning({ id: auditEvents.id }),
    staleFailedSignInWindows: db
      .delete(failedSignInWindows)
      .where(lt(failedSignInWindows.windowStart, now - FAILED_SIGN_IN_WINDOW_MS))
      .returning({ userId: failedSignInWindows.userId }),
  };
}
