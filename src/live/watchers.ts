import { and, eq, lt, sql, type SQL } from "drizzle-orm";
import { liveSessionOf } from "../auth/caller";
import { compile, type Placeholders } from "../db/compiled";
import type { AccessClaims } from "../lib/access-token";
import { SECOND } from "../lib/units";
import type { Database } from "../types";
import { liveWatchers } from "./schema";
import { TICKET_TTL_MS } from "./protocol";

/**
 * Who may be watching an account's notes, the only SQL of `live_watchers`. Every note write reads it in its own
 * batch (handed to the notes area as `watching`) and pokes the account's hub only when the row is there.
 *
 * The rule that keeps a socket from missing a poke: the row is written (or its `since` moved on) by the
 * statement batch that hands out a ticket, before the hub holds the ticket's place, so it exists before any
 * socket can open. A hub removes it only when it has no socket and no place held, and only if it is older than
 * a ticket's lifetime (and a margin for the clocks of the worker and the hub): any ticket handed out later, or
 * still usable, has a newer `since`, so its row stays. A row left behind (a socket that vanished) costs a poke,
 * and the hub that receives it with no socket removes it.
 */

/** The clocks of the worker that stamps `since` and of the hub that compares it may differ by this much. */
const CLOCK_MARGIN_MS = 5 * SECOND;

/** The statement that marks the caller's account as watched from `now`, while its session is live: for the ticket's batch. */
export function markWatched(db: Database, caller: AccessClaims, now: number) {
  const session = liveSessionOf(db, caller, now);
  return db
    .insert(liveWatchers)
    .select(
      db
        .select({ userId: session.userId, since: sql<number>`${now}`.as("since") })
        .from(session)
        // A WHERE ends the FROM, so SQLite does not read the ON CONFLICT below as a join's ON.
        .where(sql`true`),
    )
    .onConflictDoUpdate({ target: liveWatchers.userId, set: { since: sql`excluded.since` } });
}

/** The account's id, under its field's name (a compiled statement's rows are keyed by column name). */
const watchedId = { userId: sql<number>`${liveWatchers.userId}`.as("userId") };

const watchedRow = compile((db, p: Placeholders<{ userId: number }>) =>
  db.select(watchedId).from(liveWatchers).where(eq(liveWatchers.userId, p.userId)),
);

/** A row while account `userId` may be watched: a statement for a note write's batch (compiled once). */
export const watching = (db: Database, userId: number) => watchedRow(db.$client, { userId });

/**
 * The accounts among `accounts` (an SQL subquery of user ids: a shared note's readers) that may be watched, a row
 * each: a query for the notes area to compile once, with its own placeholders, and run in a write's batch.
 */
export function watchedAmong(db: Database, accounts: SQL) {
  return db
    .select(watchedId)
    .from(liveWatchers)
    .where(sql`${liveWatchers.userId} IN ${accounts}`);
}

/** The hub found no socket and no ticket pending at `now`: the account is no longer watched, unless a newer ticket says so. */
export async function forgetWatchers(db: Database, userId: number, now: number): Promise<void> {
  await db
    .delete(liveWatchers)
    .where(and(eq(liveWatchers.userId, userId), lt(liveWatchers.since, now - TICKET_TTL_MS - CLOCK_MARGIN_MS)));
}
