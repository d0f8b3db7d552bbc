import { and, eq, sql, type Placeholder } from "drizzle-orm";
import { notes } from "../db/schema";
import type { Database } from "../types";
import { ownedBy } from "./list";
import { noteJsonText } from "./schemas";

/**
 * The single-note queries. SQLite writes each note's JSON (`noteJsonText`), so a handler passes the text
 * on. Each query is written once, for values or placeholders: with values it is an ordinary Drizzle query,
 * to await or to put in a `db.batch()` with other statements; the handlers run it prepared with
 * placeholders, built once per isolate, because building Drizzle's SQL costs more than all the rest of a
 * request's JavaScript.
 */

type Value<T> = T | Placeholder;
/** A user id, or undefined while notes are public (see `ownedBy`). */
type Owner = Value<number> | undefined;

/** The note with this id, of the caller when notes are private: someone else's note is not found. */
const thisNote = (id: Value<number>, owner: Owner) => and(eq(notes.id, id), ownedBy(owner));

/** The note's JSON, or no row. */
export const readNote = (db: Database, id: Value<number>, owner: Owner) =>
  db.select({ json: noteJsonText }).from(notes).where(thisNote(id, owner));

/** Inserts a note; its JSON. */
export const insertNote = (
  db: Database,
  note: { title: Value<string>; content: Value<string>; createdAt: Value<Date>; userId: Value<number | null> },
) => db.insert(notes).values(note).returning({ json: noteJsonText });

/** Sets the given fields (null keeps a field as it is) in one statement; the note's JSON after it, or no row. */
export const updateNote = (db: Database, id: Value<number>, owner: Owner, title: Value<string | null>, content: Value<string | null>) =>
  db
    .update(notes)
    .set({ title: sql`coalesce(${title}, ${notes.title})`, content: sql`coalesce(${content}, ${notes.content})` })
    .where(thisNote(id, owner))
    .returning({ json: noteJsonText });

/** Deletes the note; its id, or no row. */
export const deleteNote = (db: Database, id: Value<number>, owner: Owner) =>
  db.delete(notes).where(thisNote(id, owner)).returning({ id: notes.id });

const id = sql.placeholder("id");
const owner = sql.placeholder("owner");
const title = sql.placeholder("title");
const content = sql.placeholder("content");

/** Each query prepared with placeholders, for public and for owned notes. */
function prepareAll(db: Database, owner: Owner) {
  return {
    read: readNote(db, id, owner).prepare(),
    insert: insertNote(db, { title, content, createdAt: sql.placeholder("createdAt"), userId: sql.placeholder("userId") }).prepare(),
    update: updateNote(db, id, owner, title, content).prepare(),
    delete: deleteNote(db, id, owner).prepare(),
  };
}

type Prepared = ReturnType<typeof prepareAll>;
const prepared = new WeakMap<Database, { public: Prepared; owned: Prepared }>();

/**
 * The prepared queries for this database, for public notes or for the caller's own: run them with
 * `{ id, owner, ... }`. `db` lives as long as the isolate (see src/index.ts), so this is built once.
 */
export function noteQueries(db: Database, isOwned: boolean): Prepared {
  let both = prepared.get(db);
  if (!both) prepared.set(db, (both = { public: prepareAll(db, undefined), owned: prepareAll(db, owner) }));
  return isOwned ? both.owned : both.public;
}
