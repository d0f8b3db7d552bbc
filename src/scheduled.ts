import type { BatchItem } from "drizzle-orm/batch";
import { authCleanUp } from "./auth/cleanup";
import { batchOf } from "./db/client";
import { createLogger, describeError } from "./lib/log";
import { liveCleanUp } from "./live/tickets";
import { attachmentsCleanUp, removeQueuedObjects } from "./notes/attachments/cleanup";
import { notesCleanUp } from "./notes/lifecycle";
import { auditCleanUp } from "./audit/store";
import { sweepDeliveries } from "./audit/webhooks/deliver";
import { trailOf } from "./audit/writer";
import type { Config } from "./config";
import { DAY } from "./lib/units";
import type { Bindings, Database } from "./types";

/**
 * An area's share of the clean-up: statements by name (one, or several counted together), each returning a row for
 * what it removed, moved on or recorded.
 */
type CleanUpList = Record<string, BatchItem<"sqlite"> | BatchItem<"sqlite">[]>;

/**
 * The cron trigger's work (`[triggers] crons` in wrangler.toml): each area's clean-up list, run in one
 * batch in the order the areas give; then the attachments' R2 objects whose rows are gone, and one log line with how
 * many rows each named statement touched and objects were removed; then the webhook deliveries that are due and held
 * by no attempt go to the queue again (audit/webhooks/deliver.ts).
 */
export async function cleanUp(env: Bindings, db: Database, config: Config, now: number): Promise<void> {
  const log = createLogger({ event_source: "scheduled" });
  // The service's own changes (the deletion of accounts never verified) are recorded as the system's.
  const audit = trailOf({ db, webhooks: config.webhooks, actor: "system", ip: null, userAgent: null });
  const lists: CleanUpList[] = [
    authCleanUp(db, now, audit),
    notesCleanUp(db, now),
    attachmentsCleanUp(db, now),
    liveCleanUp(db, now),
    auditCleanUp(db, now, config.auditRetentionDays * DAY),
  ];
  const named = lists.flatMap((list) =>
    Object.entries(list).flatMap(([name, statements]) =>
      (Array.isArray(statements) ? statements : [statements]).map((statement) => [name, statement] as const),
    ),
  );
  const results = await batchOf(
    db,
    named.map(([, statement]) => statement),
  );
  const counts: Record<string, number> = {};
  named.forEach(([name], i) => (counts[name] = (counts[name] ?? 0) + rowCount(results[i])));
  // R2 unreachable: the rows' counts are still logged, and the queued keys wait for the next run.
  const objects = await removeQueuedObjects(db, env.ATTACHMENTS, now).catch((err: unknown) => {
    log.error("attachment_objects_not_removed", describeError(err));
    return {};
  });
  log.info("clean_up", { ...counts, ...objects });
  // Then the webhook deliveries the queue did not take or lost (the cron's events of this run among them).
  const swept = await sweepDeliveries({ db, webhooks: config.webhooks, queue: env.WEBHOOK_QUEUE, log }, Date.now());
  if (swept.queued + swept.delivered > 0) log.info("webhooks_swept", swept);
}

/** Rows a statement with `returning` answered. */
function rowCount(result: unknown): number {
  return Array.isArray(result) ? result.length : 0;
}
