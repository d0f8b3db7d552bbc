import { and, gt, lte, sql, type SQL } from "drizzle-orm";
import { forCallerOf } from "./runner";
import type { Placeholders } from "../db/compiled";
import { notes } from "./schema";
import { ownedBy, sharedWithAll, type NotesCaller } from "./access";
import { listVersion } from "./conditional";
import { noteJsonText, noteSize } from "./sql";

/**
 * The statements of GET /notes (list.ts): a chunk of the list, sized before it is read, and the exact fit
 * for notes of very different sizes.
 */

/** Which notes a chunk query looks at: ids above `after` and up to `upTo`. */
export interface ListRange {
  after: number;
  upTo: number;
}

/** The whole list's range. */
export const EVERY_ID: ListRange = { after: Number.MIN_SAFE_INTEGER, upTo: Number.MAX_SAFE_INTEGER };

/** One chunk as SQLite returns it. */
export interface Chunk {
  /** The notes' JSON objects joined by commas, by id; null when they do not fit, or the range holds none. */
  items: string | null;
  /** The id of the chunk's last note; null when the notes do not fit, or the range holds none. */
  last: number | null;
  /** The id of the last of the first `rows` notes of the range (the page), whether they fit or not. */
  pageLast: number | null;
  /** How many notes the page holds, and their estimated JSON bytes. */
  pageCount: number;
  pageBytes: number | null;
  /** 1 when the range holds notes after `pageLast`. */
  beyondPage: number;
  /** The version of the caller's notes (conditional.ts), for the list's ETag. */
  version: number;
}

/** The values of a chunk query: the range, the page's notes (`rows`) and the chunk's bytes (`budget`). */
type ChunkValues = ListRange & { rows: number; budget: number };

/** Which notes a list covers, for a caller: its own (all of them while notes are public), or those shared with it. */
type Scope = (caller: NotesCaller) => SQL | undefined;

/** The caller's own notes (GET /notes), or every note while notes are public. */
const own: Scope = ownedBy;
/** The notes shared with the caller (GET /notes?shared=true, which needs a caller). */
const shared: Scope = (caller) => (caller ? sharedWithAll(caller) : sql`false`);

/** The notes with ids above `lo` and up to `hi` in the scope. */
const between = (lo: SQL, hi: SQL, caller: NotesCaller, scope: Scope) =>
  and(gt(notes.id, lo), lte(notes.id, hi), scope(caller));

/**
 * The first `rows` notes of the range (the page), as a condition: ids up to the `rows`-th, found from the
 * index (or the rowids) without reading a note, or the whole range when it holds fewer. Not an ordered
 * `LIMIT ?` subquery: SQLite compiles a statement again whenever a bare `LIMIT ?` is bound, which nearly
 * doubled the time of a page's statement (docs/performance.md).
 */
function pageOf(p: Placeholders<ChunkValues>, caller: NotesCaller, scope: Scope) {
  const end = sql`(SELECT ${notes.id} FROM ${notes} WHERE ${between(p.after, p.upTo, caller, scope)} ORDER BY ${notes.id} LIMIT 1 OFFSET ${p.rows} - 1)`;
  return between(p.after, sql`coalesce(${end}, ${p.upTo})`, caller, scope);
}

/**
 * The first `rows` notes of the range (the page) as one chunk, when they fit `budget` bytes of JSON; when
 * they do not, no note (`last` and `items` null, `pageCount` above 0) but their count and bytes, from
 * which the caller sizes its next query (`listNotes`). The page is found from the index (pageOf) and
 * sized from the notes' stored lengths (noteSize), so a query reads the content of one chunk at most,
 * and SQLite writes the chunk's JSON: the Worker only passes the text on.
 * `group_concat` follows the scan, which runs by id: the rowid range, or with an owner the (user_id, id)
 * index.
 *
 * Compiled once per isolate (db/compiled.ts) for public notes and for one caller's, for each scope (its own
 * notes, those shared with it); the first query runs in one round trip with the check of the caller's session.
 */
const chunkOf = (scope: Scope) =>
  forCallerOf((db, p: Placeholders<ChunkValues>, caller) => {
    const cut = sql`(
    SELECT CASE WHEN bytes <= ${p.budget} THEN page_last END AS last, page_last, page_count, bytes
    FROM (SELECT max(${notes.id}) AS page_last, count(*) AS page_count, sum(${noteSize}) AS bytes FROM ${notes} WHERE ${pageOf(p, caller, scope)})
  ) AS cut`;
    return db
      .select({
        items: sql<
          string | null
        >`(SELECT group_concat(${noteJsonText}, ',') FROM ${notes} WHERE ${between(p.after, sql`cut.last`, caller, scope)})`.as(
          "items",
        ),
        last: sql<number | null>`last`.as("last"),
        pageLast: sql<number | null>`page_last`.as("pageLast"),
        pageCount: sql<number>`page_count`.as("pageCount"),
        pageBytes: sql<number | null>`bytes`.as("pageBytes"),
        beyondPage:
          sql<number>`EXISTS (SELECT 1 FROM ${notes} WHERE ${between(sql`cut.page_last`, p.upTo, caller, scope)})`.as(
            "beyondPage",
          ),
        // Read in the same statement as the notes: the list's ETag is never newer than what it lists.
        version: listVersion(caller).as("version"),
      })
      .from(cut);
  });

/**
 * How many of the first `rows` notes of the range fit `budget` bytes of JSON, read from a running sum
 * of their sizes; at least one. The last resort of `listNotes` for notes of very different sizes: a
 * window function costs SQLite far more than the sizes alone (docs/performance.md).
 */
const fittingRowsOf = (scope: Scope) =>
  forCallerOf((db, p: Placeholders<ChunkValues>, caller) =>
    db
      .select({ rows: sql<number>`max(1, count(*) FILTER (WHERE reach <= ${p.budget}))`.as("rows") })
      .from(
        sql`(SELECT sum(${noteSize}) OVER (ORDER BY ${notes.id} ROWS UNBOUNDED PRECEDING) AS reach FROM ${notes} WHERE ${pageOf(p, caller, scope)})`,
      ),
  );

/** The statements of one list: its chunks, and the exact fit. */
export interface ListStatements {
  chunkQuery: ReturnType<typeof chunkOf>;
  fittingRowsQuery: ReturnType<typeof fittingRowsOf>;
}

/** GET /notes: the caller's own notes (every note while notes are public). */
export const ownList: ListStatements = { chunkQuery: chunkOf(own), fittingRowsQuery: fittingRowsOf(own) };
/** GET /notes?shared=true: the notes shared with the caller. */
export const sharedList: ListStatements = { chunkQuery: chunkOf(shared), fittingRowsQuery: fittingRowsOf(shared) };
