import { and, eq, sql } from "drizzle-orm";
import { callerSession, liveSession } from "../auth/caller";
import { notes, sessions } from "../db/schema";
import type { AccessClaims } from "../lib/tokens";
import type { Database } from "../types";
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

/**
 * The note's JSON, or no row. A read needs no condition on the session: it runs in one batch with the
 * session check (asCaller), which throws its result away when the session is not live.
 */
export const readNote = (db: Database, id: number, caller: AccessClaims | undefined) =>
  db.select({ json: noteJsonText }).from(notes).where(and(eq(notes.id, id), ownedBy(caller?.userId)));

/** Inserts a note, the caller's when notes are private (only while the caller's session is live); its JSON. */
export function insertNote(db: Database, title: string, content: string, caller: AccessClaims | undefined, now: number) {
  if (!caller) return db.insert(notes).values({ title, content, createdAt: new Date(now), userId: null }).returning({ json: noteJsonText });
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
        })
        .from(sessions)
        .where(callerSession(caller, now)),
    )
    .returning({ json: noteJsonText });
}

/** Sets the given fields (null keeps a field as it is) in one statement; the note's JSON after it, or no row. */
export const updateNote = (
  db: Database,
  id: number,
  caller: AccessClaims | undefined,
  now: number,
  title: string | null,
  content: string | null,
) =>
  db
    .update(notes)
    .set({ title: sql`coalesce(${title}, ${notes.title})`, content: sql`coalesce(${content}, ${notes.content})` })
    .where(thisNote(id, caller, now))
    .returning({ json: noteJsonText });

/** Deletes the note; its id, or no row. */
export const deleteNote = (db: Database, id: number, caller: AccessClaims | undefined, now: number) =>
  db.delete(notes).where(thisNote(id, caller, now)).returning({ id: notes.id });
