import type { BatchItem } from "drizzle-orm/batch";
import { authCleanUp } from "./auth/cleanup";
import { batchOf } from "./db/client";
import { createLogger, describeError } from "./lib/log";
import { liveCleanUp } from "./live/tickets";
import { attachmentsCleanUp, removeQueuedObjects } from "./notes/attachments/cleanup";
import { notesCleanUp } from "./notes/lifecycle";
import type { Database } from "./types";

/** An area's share of the clean-up: statements by name, each returning a row for what it removed or moved on. */
type CleanUpList = Record<string, BatchItem<"sqlite">>;

/**
 * The cron trigger's work (`[triggers] crons` in wrangler.toml): each area's clean-up list, run in one
 * batch in the order the areas give, then the attachments' R2 objects whose rows are gone (`attachments`,
 * the bucket), and one log line with how many rows each named statement touched and objects were removed.
 */
export async function cleanUp(db: Database, now: number, attachments: R2Bucket): Promise<void> {
  const lists: CleanUpList[] = [
    authCleanUp(db, now),
    notesCleanUp(db, now),
    attachmentsCleanUp(db, now),
    liveCleanUp(db, now),
  ];
  const named = lists.flatMap((list) => Object.entries(list));
  const results = await batchOf(
    db,
    named.map(([, statement]) => statement),
  );
  const counts = Object.fromEntries(named.map(([name], i) => [name, rowCount(results[i])]));
  const log = createLogger({ event_source: "scheduled" });
  // R2 unreachable: the rows' counts are still logged, and the queued keys wait for the next run.
  const objects = await removeQueuedObjects(db, attachments, now).catch((err: unknown) => {
    log.error("attachment_objects_not_removed", describeError(err));
    return {};
  });
  log.info("clean_up", { ...counts, ...objects });
}

/** Rows a statement with `returning` answered. */
function rowCount(result: unknown): number {
  return Array.isArray(result) ? result.length : 0;
}
