import { and, lt, lte, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { RunnableQuery } from "drizzle-orm/runnable-query";
import { idempotencyKeys, noteClocks, notes, noteTombstones } from "./schema";
import type { Database } from "../types";
import { clockOf, notesOf, tombstonesOf } from "./access";
import { TOMBSTONES_KEPT_MS } from "./changes";
import { IDEMPOTENCY_KEY_TTL_MS } from "./idempotency";
import { accountAttachmentsDeletion } from "./attachments/store";

/**
 * What an account owns in the notes area, for the accounts area to run at its own times: the deletion of
 * an account and the hourly clean-up. The statements are handed over rather than run here, so that each
 * runs inside the batch (one transaction) of the flow that needs it.
 */

/**
 * Statements that delete everything account `userId` owns in notes (its notes, then its clock and
 * tombstones), each only while `guard` holds; to run inside the account-deletion batch, before the user
 * row goes. The notes go first: their triggers write tombstones and move the clock, which go next, so that
 * a later account given the same id starts a feed of its own. Its Idempotency-Keys go with the user row
 * (ON DELETE CASCADE).
 */
export function accountNotesDeletion(db: Database, userId: number, guard: SQL): BatchItem<"sqlite">[] {
  return [
    // Its attachments first (their note goes next anyway): a trigger queues each one's R2 object for the cron.
    accountAttachmentsDeletion(db, userId, guard),
    db.delete(notes).where(and(notesOf(userId), guard)),
    db.delete(noteTombstones).where(and(tombstonesOf(userId), guard)),
    db.delete(noteClocks).where(and(clockOf(userId), guard)),
  ];
}

/** A statement of a batch that answers its rows (`.returning`): a BatchItem whose count can be logged. */
export type CleanUpStatement = RunnableQuery<unknown[], "sqlite">;

/**
 * The notes area's share of the hourly clean-up, by name, in the order they must run: each statement
 * returns its rows (use `.returning(...)`), so the caller can log counts by name.
 */
export function notesCleanUp(db: Database, now: number): Record<string, CleanUpStatement> {
  // Each owner's clock remembers how far its tombstones were pruned, so that a changes cursor from before
  // then is refused (410) instead of silently missing the deletions.
  const oldTombstones = and(tombstonesOf(noteClocks.owner), lt(noteTombstones.deletedAt, now - TOMBSTONES_KEPT_MS));
  return {
    // A request repeating an expired key creates a new note anyway (see idempotency.ts).
    expiredIdempotencyKeys: db
      .delete(idempotencyKeys)
      .where(lte(idempotencyKeys.createdAt, now - IDEMPOTENCY_KEY_TTL_MS))
      .returning({ id: idempotencyKeys.id }),
    prunedClocks: db
      .update(noteClocks)
      .set({
        prunedThrough: sql`max(${noteClocks.prunedThrough}, (SELECT max(${noteTombstones.seq}) FROM ${noteTombstones} WHERE ${oldTombstones}))`,
      })
      .where(sql`EXISTS (SELECT 1 FROM ${noteTombstones} WHERE ${oldTombstones})`)
      .returning({ owner: noteClocks.owner }),
    prunedTombstones: db
      .delete(noteTombstones)
      .where(lt(noteTombstones.deletedAt, now - TOMBSTONES_KEPT_MS))
      .returning({ seq: noteTombstones.seq }),
  };
}
