import { and, eq, sql, type SQL } from "drizzle-orm";
import { callerSession, forCaller, forCallerOf, liveSession, type CallerValues } from "../auth/caller";
import { compile, type Placeholders } from "../db/compiled";
import { notes, sessions } from "../db/schema";
import type { AccessClaims } from "../lib/tokens";
import type { Database } from "../types";
import { nextRevision, nextRevisionOfRow, PUBLIC_OWNER, type Precondition } from "./conditional";
import { ownedBy } from "./list";
import { noteJsonText } from "./schemas";

/**
 * The single-note statements. SQLite writes each note's JSON (`noteJsonText`), so a handler passes the
 * text on. Each is compiled once per isolate (db/compiled.ts) in two shapes (forCaller): public notes, and
 * with NOTES_AUTH=required (`caller` set) only the caller's notes, and a write only while the caller's
 * session is live: a write never happens for an ended session. Each is bound for one request, to run in one
 * round trip with the check of the caller's session (see asCaller).
 */

/** What a statement answers of a note: its JSON (written by SQLite) and its revision (the ETag). */
const noteAnswer = { json: noteJsonText.as("json"), revision: notes.revision };

type Caller = Placeholders<CallerValues>;
type Now = { now: number };

/** The note with this id, of the caller when notes are private: someone else's note is not found. */
const thisNote = (id: SQL<number>, caller?: Caller) => and(eq(notes.id, id), ownedBy(caller?.userId), caller && liveSession(caller, caller.now));

/**
 * The condition of a conditional write: the note's revision is one of those asked for (`revisions`, a
 * JSON array), or any revision (null). One statement for any number of tags.
 */
const revisionMatches = (revisions: SQL<string | null>) =>
  sql`(${revisions} IS NULL OR ${notes.revision} IN (SELECT value FROM json_each(${revisions})))`;

/** The `revisions` value of a precondition: null for none or `*`, else its revisions (none: matches nothing). */
const revisionsOf = (precondition: Precondition | undefined) => (!precondition || precondition.any ? null : JSON.stringify(precondition.revisions));

type ReadValues = { id: number };
const read = forCaller({
  public: compile((db, p: Placeholders<ReadValues & Now>) => db.select(noteAnswer).from(notes).where(thisNote(p.id))),
  // No condition on the session: the check batched with it decides (asCaller), and throws the result away.
  private: compile((db, p: Placeholders<ReadValues & CallerValues>) => db.select(noteAnswer).from(notes).where(and(eq(notes.id, p.id), ownedBy(p.userId)))),
});

/** The note's JSON and revision, or no row. */
export const readNote = (db: Database, id: number, caller: AccessClaims | undefined, now: number) => read(db, caller, now, { id });

type InsertValues = { title: string; content: string };
const insert = forCaller({
  public: compile((db, p: Placeholders<InsertValues & Now>) =>
    db
      .insert(notes)
      .values({ title: p.title, content: p.content, createdAt: p.now, userId: null, revision: nextRevision(PUBLIC_OWNER) })
      .returning(noteAnswer),
  ),
  private: compile((db, p: Placeholders<InsertValues & CallerValues>) =>
    db
      .insert(notes)
      .select(
        // Every column, in the table's order (drizzle's rule for INSERT … SELECT); a NULL id is assigned.
        db
          .select({
            id: sql<number>`NULL`.as("id"),
            title: sql<string>`${p.title}`.as("title"),
            content: sql<string>`${p.content}`.as("content"),
            createdAt: sql<number>`${p.now}`.as("created_at"),
            userId: sessions.userId,
            revision: sql<number>`${nextRevision(p.userId)}`.as("revision"),
          })
          .from(sessions)
          .where(callerSession(p, p.now)),
      )
      .returning(noteAnswer),
  ),
});

/** Inserts a note, the caller's when notes are private (only while the caller's session is live); its JSON. */
export const insertNote = (db: Database, title: string, content: string, caller: AccessClaims | undefined, now: number) =>
  insert(db, caller, now, { title, content });

type UpdateValues = { id: number; title: string | null; content: string | null; revisions: string | null };
function updateOf(db: Database, p: Placeholders<UpdateValues>, caller?: Caller) {
  const newTitle = sql`coalesce(${p.title}, ${notes.title})`;
  const newContent = sql`coalesce(${p.content}, ${notes.content})`;
  return db
    .update(notes)
    .set({
      title: newTitle,
      content: newContent,
      revision: sql`CASE WHEN ${newTitle} IS NOT ${notes.title} OR ${newContent} IS NOT ${notes.content} THEN ${nextRevisionOfRow()} ELSE ${notes.revision} END`,
    })
    .where(and(thisNote(p.id, caller), revisionMatches(p.revisions)))
    .returning(noteAnswer);
}
const update = forCallerOf(updateOf);

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
  return update(db, caller, now, { id, title, content, revisions: revisionsOf(precondition) });
}

type DeleteValues = { id: number; revisions: string | null };
const remove = forCallerOf((db, p: Placeholders<DeleteValues>, caller) =>
  db.delete(notes).where(and(thisNote(p.id, caller), revisionMatches(p.revisions))).returning({ id: notes.id }),
);

/** Deletes the note, only while its revision satisfies `precondition`; its id, or no row. */
export const deleteNote = (db: Database, id: number, caller: AccessClaims | undefined, now: number, precondition?: Precondition) =>
  remove(db, caller, now, { id, revisions: revisionsOf(precondition) });
