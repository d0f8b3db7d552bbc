import { and, lt, lte, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { RunnableQuery } from "drizzle-orm/runnable-query";
import { idempotencyKeys, noteClocks, notes, noteTombstones } from "./schema";
import type { Database } from "../types";
import { clockOf, notesOf, sharedChangesOf, tombstonesOf } from "./access";
import { TOMBSTONES_KEPT_MS } from "./changes";
import { IDEMPOTENCY_KEY_TTL_MS } from "./idempotency";
import { accountAttachmentsDeletion } from "./attachments/store";
import { SHARE_ADDRESS_WINDOW_MS } from "./sharing/policy";
import { sharedChanges, shareMailAddresses } from "./sharing/schema";
import { sharesReceivedBy } from "./sharing/share-store";

/**
 * What an account owns in the notes area, for the accounts area to run at its own times: the deletion of
 * an account and the hourly clean-up. The statements are handed over rather than run here, so that each
 * runs inside the batch (one transaction) of the flow that needs it.
 */

/**
 * Statements that delete everything account `userId` has in notes (the shares it received, its notes with their
 * links and shares, then its feed: the rows of what was shared with it, its tombstones and its clock), each only
 * while `guard` holds; to run inside the account-deletion batch, before the user row goes. The shares and notes
 * go first: their triggers write tombstones and move clocks (its own, and each grantee's: a note shared with
 * others ends in their feeds), and its own feed goes next, so that a later account given the same id starts a
 * feed of its own. Its Idempotency-Keys and its sharing mail addresses go with the user row (ON DELETE CASCADE).
 */
export function accountNotesDeletion(db: Database, userId: number, guard: SQL): BatchItem<"sqlite">[] {
  return [
    // Its attachments first (their note goes next anyway): a trigger queues each one's R2 object for the cron.
    accountAttachmentsDeletion(db, userId, guard),
    sharesReceivedBy(db, userId, guard),
    // Their links and shares go with them (ON DELETE CASCADE), each share's end in its grantee's feed.
    db.delete(notes).where(and(notesOf(userId), guard)),
    db.delete(sharedChanges).where(and(sharedChangesOf(userId), guard)),
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
  // Each reader's clock remembers how far its tombstones and its shares' ends were pruned, so that a changes cursor
  // from before then is refused (410) instead of silently missing the deletions.
  const kept = now - TOMBSTONES_KEPT_MS;
  const oldTombstones = and(tombstonesOf(noteClocks.owner), lt(noteTombstones.deletedAt, kept));
  const oldEnds = and(sharedChangesOf(noteClocks.owner), lt(sharedChanges.endedAt, kept));
  const lastOf = (seq: SQL, table: SQL, where: SQL | undefined) =>
    sql`coalesce((SELECT max(${seq}) FROM ${table} WHERE ${where}), 0)`;
  return {
    // A request repeating an expired key creates a new note anyway (see idempotency.ts).
    expiredIdempotencyKeys: db
      .delete(idempotencyKeys)
      .where(lte(idempotencyKeys.createdAt, now - IDEMPOTENCY_KEY_TTL_MS))
      .returning({ id: idempotencyKeys.id }),
    prunedClocks: db
      .update(noteClocks)
      .set({
        prunedThrough: sql`max(${noteClocks.prunedThrough}, ${lastOf(sql`${noteTombstones.seq}`, sql`${noteTombstones}`, oldTombstones)}, ${lastOf(sql`${sharedChanges.seq}`, sql`${sharedChanges}`, oldEnds)})`,
      })
      .where(
        sql`EXISTS (SELECT 1 FROM ${noteTombstones} WHERE ${oldTombstones}) OR EXISTS (SELECT 1 FROM ${sharedChanges} WHERE ${oldEnds})`,
      )
      .returning({ owner: noteClocks.owner }),
    prunedTombstones: db
      .delete(noteTombstones)
      .where(lt(noteTombstones.deletedAt, kept))
      .returning({ seq: noteTombstones.seq }),
    prunedShareEnds: db
      .delete(sharedChanges)
      .where(lt(sharedChanges.endedAt, kept))
      .returning({ seq: sharedChanges.seq }),
    // Addresses mailed more than a day ago count as new again (NEW_SHARE_ADDRESSES_PER_DAY).
    expiredShareAddresses: db
      .delete(shareMailAddresses)
      .where(lte(shareMailAddresses.mailedAt, now - SHARE_ADDRESS_WINDOW_MS))
      .returning({ email: shareMailAddresses.email }),
  };
}
