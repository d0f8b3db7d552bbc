import { and, eq, sql } from "drizzle-orm";
import { callerSession, liveSession } from "../auth/caller";
import { notes, sessions } from "../db/schema";
import type { AccessClaims } from "../lib/tokens";
import type { Database } from "../types";
import { nextRevision, nextRevisionOfRow, PUBLIC_OWNER, revisionMatches, type Precondition } from "./conditional";
import { ownedBy } from "./list";
import { noteJsonText } from "./schemas";

/**
 * The single-note statements. SQLite writes each note's JSON (`noteJsonText`), so a handler passes the
 * text on. Each is an ordinary Drizzle query, to run in one `db.batch()` with the check of the caller's
 * session (see asCaller). With NOTES_AUTH=required (`caller` set) a statement only sees the caller's
 * notes, and only while the caller's session is live: a write never happens for an ended session.
 */

/** The note with this id, of the caller when notes are private: someone else's note is not found. */
const thisNote = (id: number, caller: AccessClaims | undefined, now: number) =>
  and(eq(notes.id, id), ownedBy(caller?.userId), caller && liveSession(caller, now));

/** What a statement answers of a note: its JSON (written by SQLite) and its revision (the ETag). */
const noteAnswer = { json: noteJsonText, revision: notes.revision };

/**
 * The note's JSON and revision, or no row. A read needs no condition on the session: it runs in one batch with the
 * session check (asCaller), which throws its result away when the session is not live.
 */
export const readNote = (db: Database, id: number, caller: AccessClaims | undefined) =>
  db.select(noteAnswer).from(notes).where(and(eq(notes.id, id), ownedBy(caller?.userId)));

/** Inserts a note, the caller's when notes are private (only while the caller's session is live); its JSON. */
export function insertNote(db: Database, title: string, content: string, caller: AccessClaims | undefined, now: number) {
  if (!caller) {
    return db.insert(notes).values({ title, content, createdAt: new Date(now), userId: null, revision: nextRevision(PUBLIC_OWNER) }).returning(noteAnswer);
  }
  return db
    .insert(notes)
    .select(
      // Every column, in the table's order (drizzle's rule for INSERT … SELECT); a NULL id is assigned.
      db
        .select({
          id: sql<number>`NULL`.as("id"),
          title: sql<string>`${title}`.as("title"),
          content: sql<string>`${content}`.as("content"),
          createdAt: sql<number>`${now}`.as("created_at"),
          userId: sessions.userId,
          revision: sql<number>`${nextRevision(caller.userId)}`.as("revision"),
        })
        .from(sessions)
        .where(callerSession(caller, now)),
    )
    .returning(noteAnswer);
}

/**
 * Sets the given fields (null keeps a field as it is) in one statement, only while the note's revision
 * satisfies `precondition` (If-Match): decided by the write itself, never by a value read before it. A
 * change of title or content gives the note its owner's next revision; the same values keep it. The
 * note's JSON and revision after it, or no row.
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
  const newTitle = sql`coalesce(${title}, ${notes.title})`;
  const newContent = sql`coalesce(${content}, ${notes.content})`;
  return db
    .update(notes)
    .set({
      title: newTitle,
      content: newContent,
      revision: sql`CASE WHEN ${newTitle} IS NOT ${notes.title} OR ${newContent} IS NOT ${notes.content} THEN ${nextRevisionOfRow()} ELSE ${notes.revision} END`,
    })
    .where(and(thisNote(id, caller, now), revisionMatches(precondition)))
    .returning(noteAnswer);
}

/** Deletes the note, only while its revision satisfies `precondition`; its id, or no row. */
export const deleteNote = (db: Database, id: number, caller: AccessClaims | undefined, now: number, precondition?: Precondition) =>
  db.delete(notes).where(and(thisNote(id, caller, now), revisionMatches(precondition))).returning({ id: notes.id });
