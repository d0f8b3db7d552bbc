import { and, eq, isNull, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import { liveSession, type CallerValues } from "../auth/caller";
import type { Placeholders } from "../db/compiled";
import { idempotencyKeys, noteClocks, notes, noteTombstones } from "./schema";

/**
 * Who may read and write which notes, said once: every statement of the area takes its owner conditions
 * from here. With NOTES_AUTH=off notes are public and there is no caller; with NOTES_AUTH=required a
 * caller sees only its own notes, and writes them only while its session is live.
 *
 * Ownership is one user per note, and the clocks behind revisions and the changes feed are one per owner
 * (docs/design.md, "One clock per owner"): these conditions are where a shared note would start.
 */

/** A caller as a compiled statement names it (its placeholders, see forCallerOf); undefined while notes are public. */
export type NotesCaller = Placeholders<CallerValues> | undefined;

/** An owner as a statement names it: a user id, or a placeholder, expression or column holding one. */
type Owner = number | SQLWrapper;

/** The owner of the public notes in the clocks and tombstones (user ids start at 1). */
const PUBLIC_OWNER = 0;

/** The notes of user `owner`. */
export const notesOf = (owner: Owner): SQL => eq(notes.userId, owner);

/** The notes a caller may read: every note while notes are public, the caller's own otherwise. */
export function visibleTo(caller: NotesCaller): SQL | undefined {
  return caller && notesOf(caller.userId);
}

/**
 * The note `id` when the caller may write it: visible to the caller and, for a caller, only while its
 * session is live, so a write never happens for an ended session.
 */
export function writableBy(caller: NotesCaller, id: SQL<number>): SQL {
  return and(eq(notes.id, id), visibleTo(caller), caller && liveSession(caller, caller.now))!;
}

/** The owner of the clock that numbers the caller's writes: the caller, or the public notes. */
export function clockOwner(caller: NotesCaller): number | SQL<number> {
  return caller?.userId ?? PUBLIC_OWNER;
}

/**
 * The clock a note row is numbered by, as an expression on the row: with public notes a write may reach
 * a note some user wrote, and it moves that user's clock, as the triggers do.
 */
export const rowClockOwner: SQL<number> = sql<number>`coalesce(${notes.userId}, ${PUBLIC_OWNER})`;

/**
 * The notes the caller's clock numbers (what its changes feed covers): the caller's, or the notes written
 * while notes were public. Not visibleTo: the public feed has no clock for the notes users wrote.
 */
export function clockedFor(caller: NotesCaller): SQL {
  return caller ? notesOf(caller.userId) : isNull(notes.userId);
}

/** The row of `owner`'s clock. */
export const clockOf = (owner: Owner): SQL => eq(noteClocks.owner, owner);

/** The tombstones of `owner`'s deleted notes. */
export const tombstonesOf = (owner: Owner): SQL => eq(noteTombstones.owner, owner);

/** The caller's Idempotency-Keys: its own, or the one scope of the public notes. */
export function keysOf(caller: NotesCaller): SQL {
  return caller ? eq(idempotencyKeys.userId, caller.userId) : isNull(idempotencyKeys.userId);
}
