import { and, eq, sql, type SQL } from "drizzle-orm";
import type { AnySQLiteColumn } from "drizzle-orm/sqlite-core";
import { liveSessionOf } from "../auth/caller";
import { forCallerOf } from "./runner";
import type { Placeholders } from "../db/compiled";
import { notes } from "./schema";
import type { AccessClaims } from "../lib/access-token";
import type { Database } from "../types";
import { clockOwner, managedBy, roleOf, visibleTo, writableBy, type NotesCaller } from "./access";
import { revisionsOf, type Precondition } from "./conditional";
import { nextRevision, nextRevisionOfRow, noteJsonText, revisionMatches } from "./sql";

/**
 * The single-note statements. SQLite writes each note's JSON (`noteJsonText`), so a handler passes the
 * text on. Each is compiled once per isolate (db/compiled.ts) in two shapes (forCallerOf): public notes, and
 * with NOTES_AUTH=required (`caller` set) only the caller's notes, and a write only while the caller's
 * session is live: a write never happens for an ended session. Each is bound for one request, to run in one
 * round trip with the check of the caller's session (see asCaller).
 */

/** What a statement answers of a note: its JSON (written by SQLite) and its revision (the ETag). */
const noteAnswer = { json: noteJsonText.as("json"), revision: notes.revision };

type Now = { now: number };

type ReadValues = { id: number };
// No condition on the session: the check batched with it decides (asCaller), and throws the result away.
const read = forCallerOf((db, p: Placeholders<ReadValues>, caller) =>
  db
    .select({ ...noteAnswer, role: (caller ? roleOf(caller) : sql<"owner">`'owner'`).as("role") })
    .from(notes)
    .where(and(eq(notes.id, p.id), visibleTo(caller))),
);

/**
 * The note's JSON and revision, and what the caller is to it (`owner` while notes are public; `editor` or `viewer`
 * for a note shared with it), or no row.
 */
export const readNote = (db: Database, id: number, caller: AccessClaims | undefined, now: number) =>
  read(db, caller, now, { id });

type InsertValues = { title: string; content: string };

/**
 * The row of a new note for `INSERT … SELECT`, its owner and revision taken from the select's source:
 * every column in the table's order (drizzle's rule for INSERT … SELECT); a NULL id is assigned.
 */
export function newNoteRow(p: Placeholders<InsertValues & Now>, userId: AnySQLiteColumn, revision: SQL) {
  return {
    id: sql<number>`NULL`.as("id"),
    title: sql<string>`${p.title}`.as("title"),
    content: sql<string>`${p.content}`.as("content"),
    createdAt: sql<number>`${p.now}`.as("created_at"),
    userId,
    revision: sql<number>`${revision}`.as("revision"),
    updatedAt: sql<number>`${p.now}`.as("updated_at"),
  };
}

const insert = forCallerOf((db, p: Placeholders<InsertValues & Now>, caller) => {
  const revision = nextRevision(clockOwner(caller));
  if (!caller)
    return db
      .insert(notes)
      .values({ title: p.title, content: p.content, createdAt: p.now, userId: null, revision, updatedAt: p.now })
      .returning(noteAnswer);
  // Selected from the caller's live session: no row, so no note, once the session has ended.
  const session = liveSessionOf(db, caller, caller.now);
  return db
    .insert(notes)
    .select(db.select(newNoteRow(p, session.userId, revision)).from(session))
    .returning(noteAnswer);
});

/** Inserts a note, the caller's when notes are private (only while the caller's session is live); its JSON. */
export const insertNote = (
  db: Database,
  title: string,
  content: string,
  caller: AccessClaims | undefined,
  now: number,
) => insert(db, caller, now, { title, content });

type UpdateValues = { id: number; title: string | null; content: string | null; revisions: string | null };
function updateOf(db: Database, p: Placeholders<UpdateValues & Now>, caller?: NotesCaller) {
  const newTitle = sql`coalesce(${p.title}, ${notes.title})`;
  const newContent = sql`coalesce(${p.content}, ${notes.content})`;
  const changed = sql`${newTitle} IS NOT ${notes.title} OR ${newContent} IS NOT ${notes.content}`;
  return db
    .update(notes)
    .set({
      title: newTitle,
      content: newContent,
      revision: sql`CASE WHEN ${changed} THEN ${nextRevisionOfRow()} ELSE ${notes.revision} END`,
      updatedAt: sql`CASE WHEN ${changed} THEN ${p.now} ELSE ${notes.updatedAt} END`,
    })
    .where(and(writableBy(caller, p.id), revisionMatches(p.revisions)))
    .returning(noteAnswer);
}
const update = forCallerOf(updateOf);

/**
 * Sets the given fields (null keeps a field as it is) in one statement, only while the caller may change the note
 * (its owner, or an editor it is shared with) and its revision satisfies `precondition` (If-Match): decided by the
 * write itself, never by a value read before it. A change of title or content gives the note its owner's next
 * revision, whoever makes it; the same values keep it. The note's JSON and revision after it, or no row.
 */
export function updateNote(
  db: Database,
  id: number,
  caller: AccessClaims | undefined,
  now: number,
  title: string | null,
  content: string | null,
  precondition?: Precondition,
) {
  return update(db, caller, now, { id, title, content, revisions: revisionsOf(precondition) });
}

type DeleteValues = { id: number; revisions: string | null };
// Only the owner deletes a note: a grantee, editor or not, is refused (a 403 once read, routes.ts).
const remove = forCallerOf((db, p: Placeholders<DeleteValues>, caller) =>
  db
    .delete(notes)
    .where(and(managedBy(caller, p.id), revisionMatches(p.revisions)))
    .returning({ id: notes.id }),
);

/** Deletes the note, only while its revision satisfies `precondition`; its id, or no row. */
export const deleteNote = (
  db: Database,
  id: number,
  caller: AccessClaims | undefined,
  now: number,
  precondition?: Precondition,
) => remove(db, caller, now, { id, revisions: revisionsOf(precondition) });

// A read after a write that did nothing: no condition on the session either (asCaller's check decides).
const role = forCallerOf((db, p: Placeholders<ReadValues>, caller) =>
  db
    .select({ role: (caller ? roleOf(caller) : sql<"owner">`'owner'`).as("role") })
    .from(notes)
    .where(and(eq(notes.id, p.id), visibleTo(caller))),
);

/**
 * What the caller is to note `id` (`owner`, `editor`, `viewer`), or no row when it may not see it: read after a
 * write that did nothing, to answer a grantee without the right 403 and anyone else 404.
 */
export const readRole = (db: Database, id: number, caller: AccessClaims | undefined, now: number) =>
  role(db, caller, now, { id });
