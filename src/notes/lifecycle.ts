import { and, eq, lt, lte, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { idempotencyKeys, noteClocks, notes, noteTombstones } from "../db/schema";
import type { Database } from "../types";
import { TOMBSTONES_KEPT_MS } from "./changes";
import { IDEMPOTENCY_KEY_TTL_MS } from "./idempotency";

/** What an account owns in notes, and the area's share of the hourly clean-up: handed to the other parts at wiring time. */

/** Statements that delete everything account `userId` owns in notes (its notes, then its clock and tombstones), each only while `guard` holds. */
export function accountNotesDeletion(db: Database, userId: number, guard: SQL): BatchItem<"sqlite">[] {
  return [
    db.delete(notes).where(and(eq(notes.userId, userId), guard)),
    db.delete(noteTombstones).where(and(eq(noteTombstones.owner, userId), guard)),
    db.delete(noteClocks).where(and(eq(noteClocks.owner, userId), guard)),
  ];
}

/** The notes area's share of the hourly clean-up, by name. */
export function notesCleanUp(db: Database, now: number) {
  const old = and(eq(noteTombstones.owner, noteClocks.owner), lt(noteTombstones.deletedAt, now - TOMBSTONES_KEPT_MS));
  return {
    expiredIdempotencyKeys: db.delete(idempotencyKeys).where(lte(idempotencyKeys.createdAt, now - IDEMPOTENCY_KEY_TTL_MS)).returning({ id: idempotencyKeys.id }),
    prunedClocks: db
      .update(noteClocks)
      .set({ prunedThrough: sql`max(${noteClocks.prunedThrough}, (SELECT max(${noteTombstones.seq}) FROM ${noteTombstones} WHERE ${old}))` })
      .where(sql`EXISTS (SELECT 1 FROM ${noteTombstones} WHERE ${old})`)
      .returning({ owner: noteClocks.owner }),
    prunedTombstones: db.delete(noteTombstones).where(lt(noteTombstones.deletedAt, now - TOMBSTONES_KEPT_MS)).returning({ seq: noteTombstones.seq }),
  };
}
