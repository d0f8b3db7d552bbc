import { and, eq, isNull, or, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import { liveSession, type CallerValues } from "../auth/caller";
import type { Placeholders } from "../db/compiled";
import { idempotencyKeys, noteClocks, notes, noteTombstones } from "./schema";
import { noteShares, sharedChanges, type ShareRole } from "./sharing/schema";

/**
 * Who may do what with which notes, said once: every statement of the area (notes, attachments, the feed, the
 * live pokes, sharing) takes its conditions from here. With NOTES_AUTH=off notes are public and there is no
 * caller. With NOTES_AUTH=required a caller owns its notes (reads, changes, deletes and shares them), and reads
 * the notes shared with it, changing those it is an editor of (docs/sharing.md); every write only while its
 * session is live.
 *
 * A note has one owner, whose clock numbers its revisions; a reader's changes feed is its own clock, which the
 * changes of notes shared with it move on too (docs/design.md, "One clock per owner"; docs/sync.md).
 */

/** A caller as a compiled statement names it (its placeholders, see forCallerOf); undefined while notes are public. */
export type NotesCaller = Placeholders<CallerValues> | undefined;

/** An owner as a statement names it: a user id, or a placeholder, expression or column holding one. */
type Owner = number | SQLWrapper;

/** The owner of the public notes in the clocks and tombstones (user ids start at 1). */
const PUBLIC_OWNER = 0;

/** The notes of user `owner`. */
export const notesOf = (owner: Owner): SQL => eq(notes.userId, owner);

/** The notes a caller owns: every note while notes are public (the list, search, creates). */
export function ownedBy(caller: NotesCaller): SQL | undefined {
  return caller && notesOf(caller.userId);
}

/** The shares that reached account `reader` (as one of `roles`, when given). */
const sharesReaching = (reader: Owner, roles?: readonly ShareRole[]) =>
  and(
    eq(noteShares.granteeId, reader),
    roles &&
      sql`${noteShares.role} IN (${sql.join(
        roles.map((role) => sql`${role}`),
        sql`, `,
      )})`,
  );

/** The note row at hand is shared with the caller (as any role, or one of `roles`): one indexed lookup. */
export function sharedWith(caller: Placeholders<CallerValues>, roles?: readonly ShareRole[]): SQL {
  return sql`EXISTS (SELECT 1 FROM ${noteShares} WHERE ${eq(noteShares.noteId, notes.id)} AND ${sharesReaching(caller.userId, roles)})`;
}

/**
 * The same notes as sharedWith, as a set of ids: for a list of them, which SQLite then reads from the caller's
 * shares (their index) rather than from every note in an id range.
 */
export function sharedWithAll(caller: Placeholders<CallerValues>): SQL {
  return sql`${notes.id} IN (SELECT ${noteShares.noteId} FROM ${noteShares} WHERE ${sharesReaching(caller.userId)})`;
}

/** The notes a caller may read: every note while notes are public; its own and those shared with it otherwise. */
export function visibleTo(caller: NotesCaller): SQL | undefined {
  return caller && or(notesOf(caller.userId), sharedWith(caller));
}

/** The note `id`, with a condition on the caller, only while the caller's session is live. */
const forLiveCaller = (caller: NotesCaller, id: SQL<number>, condition: SQL | undefined) =>
  and(eq(notes.id, id), condition, caller && liveSession(caller, caller.now))!;

/**
 * The note `id` when the caller may change it (its title and content, its attachments): its own or shared with it
 * as an editor and, for a caller, only while its session is live, so a write never happens for an ended session.
 */
export function writableBy(caller: NotesCaller, id: SQL<number>): SQL {
  return forLiveCaller(caller, id, caller && or(notesOf(caller.userId), sharedWith(caller, ["editor"])));
}

/**
 * The note `id` when the caller may do what only an owner does (delete it, share it, make links to it): its own,
 * while its session is live.
 */
export function managedBy(caller: NotesCaller, id: SQL<number>): SQL {
  return forLiveCaller(caller, id, ownedBy(caller));
}

/**
 * What the caller is to the note row at hand, as SQL: `owner`, `editor`, `viewer`, or NULL when it may not see it.
 * Read after a write that did nothing, to tell a 403 (a grantee without the right) from a 404.
 */
export function roleOf(caller: Placeholders<CallerValues>): SQL<"owner" | ShareRole | null> {
  return sql<"owner" | ShareRole | null>`CASE WHEN ${notesOf(caller.userId)} THEN 'owner'
    WHEN ${sharedWith(caller, ["editor"])} THEN 'editor' WHEN ${sharedWith(caller)} THEN 'viewer' END`;
}

/** Every account that reads note `id`: its owner and the accounts its shares reached (who to tell of a change). */
export function readersOf(id: SQL<number>): SQL {
  return sql`(SELECT ${notes.userId} FROM ${notes} WHERE ${eq(notes.id, id)} AND ${notes.userId} IS NOT NULL
    UNION SELECT ${noteShares.granteeId} FROM ${noteShares} WHERE ${eq(noteShares.noteId, id)} AND ${noteShares.granteeId} IS NOT NULL)`;
}

/** The share row at hand is on a note the caller owns. */
const ownsSharedNote = (caller: Placeholders<CallerValues>) =>
  sql`EXISTS (SELECT 1 FROM ${notes} WHERE ${eq(notes.id, noteShares.noteId)} AND ${notesOf(caller.userId)})`;

/** The share row at hand is the caller's to see: a share of a note it owns, or the share that reached it. */
export function shareVisibleTo(caller: Placeholders<CallerValues>): SQL {
  return or(eq(noteShares.granteeId, caller.userId), ownsSharedNote(caller))!;
}

/**
 * The share row at hand is the caller's to end, while its session is live: any share of a note it owns (revoking
 * it), or the share that reached it (leaving the note).
 */
export function shareRemovableBy(caller: Placeholders<CallerValues>): SQL {
  return and(shareVisibleTo(caller), liveSession(caller, caller.now))!;
}

/** The account share `id` reached, if any (who to tell of its start or end). */
export function granteeOf(id: SQL<string>): SQL {
  return sql`(SELECT ${noteShares.granteeId} FROM ${noteShares} WHERE ${eq(noteShares.id, id)} AND ${noteShares.granteeId} IS NOT NULL)`;
}

/** The feed rows of the notes shared with `reader` (shared_changes). */
export const sharedChangesOf = (reader: Owner): SQL => eq(sharedChanges.reader, reader);

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
