import { sql, type SQL, type SQLWrapper } from "drizzle-orm";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import { noteClocks, notes } from "./schema";
import { clockOf, rowClockOwner } from "./access";

/**
 * The SQL the notes area's statements share: a note's JSON as SQLite writes it, its size estimated from
 * stored lengths, and the clocks that number revisions (see note_clocks). Who may see which notes is
 * access.ts.
 */

/**
 * Bytes of JSON per D1 query when a statement answers notes (a list chunk, a search page, a changes
 * page), estimated before any content is read. D1 refuses any string over 2,000,000 bytes, the chunk's
 * JSON included, and a chunk reads about this much content, so one query never holds the database for
 * long whatever the size of the notes.
 */
export const LIST_CHUNK_BYTES = 1_500_000;

/**
 * JSON bytes of a note besides its title and content: `{"id":…,"title":"","content":"","created_at":"…"}`
 * with a 16-digit id, and the comma before it.
 */
export const NOTE_JSON_OVERHEAD = 88;

/**
 * The estimated JSON bytes of a note with `overhead` bytes around its title and content, from their stored
 * lengths alone: SQLite reads a value's length from the row header, without its content.
 */
export const estimatedJsonBytes = (overhead: number) =>
  sql<number>`octet_length(${notes.title}) + octet_length(${notes.content}) + ${overhead}`;

/** A note's estimated JSON bytes in a list. */
export const noteSize = estimatedJsonBytes(NOTE_JSON_OVERHEAD);

/**
 * Epoch milliseconds as `Date.prototype.toISOString()` writes them (`2026-01-02T03:04:05.678Z`), in SQL.
 * `date()` and integer arithmetic take a third of the time of one `strftime('%Y-%m-%dT%H:%M:%fZ', …)`,
 * which remains for times before 1970, where `%` of a negative number would not do.
 */
export function isoTimestamp(ms: SQLWrapper): SQL {
  return sql`CASE WHEN ${ms} >= 0
    THEN date(${ms} / 1000, 'unixepoch') || printf('T%02d:%02d:%02d.%03dZ', ${ms} / 3600000 % 24, ${ms} / 60000 % 60, ${ms} / 1000 % 60, ${ms} % 1000)
    ELSE strftime('%Y-%m-%dT%H:%M:%fZ', ${ms} / 1000.0, 'unixepoch') END`;
}

/**
 * A note's JSON text (`NoteJson`) built by SQLite, byte for byte what `JSON.stringify` writes: the same keys
 * in the same order, the same escapes (`\"`, `\\`, the short forms `\n`, `\t`, ... and `\u001f` for the other
 * control characters, everything else as UTF-8). Tests hold the two to each other.
 */
const noteJson = sql`json_object('id', ${notes.id}, 'title', ${notes.title}, 'content', ${notes.content}, 'created_at', ${isoTimestamp(notes.createdAt)})`;
/**
 * Written out once: the expression holds no value, and as one piece of text it costs a statement that
 * shows it nothing to build, where its dozens of column references cost every statement that did.
 */
export const noteJsonText = sql.raw(new SQLiteSyncDialect().sqlToQuery(noteJson).sql) as SQL<string>;

/** A column of `owner`'s clock (its sequence unless told), as a scalar: 0 for an owner without a clock yet. */
export function clockValue(
  owner: number | SQL,
  column: typeof noteClocks.seq | typeof noteClocks.prunedThrough = noteClocks.seq,
): SQL<number> {
  return sql<number>`coalesce((SELECT ${column} FROM ${noteClocks} WHERE ${clockOf(owner)}), 0)`;
}

/** The revision a write gives a note of `owner` (a number, or an expression on the row being written). */
export function nextRevision(owner: number | SQL): SQL {
  return sql`(${clockValue(owner)} + 1)`;
}

/** The same, for the note row an UPDATE is writing: numbered by its own owner's clock. */
export const nextRevisionOfRow = () => nextRevision(rowClockOwner);

/**
 * The SQL condition of a conditional write: the note's revision is one of those asked for (`revisions`, a
 * JSON array, see revisionsOf), or any revision (null). One statement for any number of tags.
 */
export function revisionMatches(revisions: SQL<string | null>): SQL {
  return sql`(${revisions} IS NULL OR ${notes.revision} IN (SELECT value FROM json_each(${revisions})))`;
}
