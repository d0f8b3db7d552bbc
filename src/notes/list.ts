import { and, eq, gt, lte, sql, type SQL } from "drizzle-orm";
import { asCaller, forCallerOf } from "../auth/caller";
import { rowsOf, type Placeholders } from "../db/compiled";
import { notes } from "../db/schema";
import { describeError, type Logger } from "../lib/log";
import type { AccessClaims } from "../lib/tokens";
import type { Database } from "../types";
import { listVersion } from "./conditional";
import { noteJsonText } from "./schemas";

/**
 * Bytes of JSON per D1 query when listing, estimated before any content is read (see `chunkQuery`). D1
 * refuses any string over 2,000,000 bytes, the chunk's JSON included, and a chunk reads about this much
 * content, so one query never holds the database for long whatever the size of the notes.
 */
export const LIST_CHUNK_BYTES = 1_500_000;
/**
 * The estimate is exact for text without escapes; JSON escaping makes a character at most 6 bytes
 * (`\u0001`), so a chunk estimated at a sixth of the budget always fits. Used again for a chunk whose JSON
 * came out too long.
 */
const SAFE_CHUNK_BYTES = Math.floor(LIST_CHUNK_BYTES / 6);
/**
 * JSON bytes of a note besides its title and content: `{"id":…,"title":"","content":"","created_at":"…"}`
 * with a 16-digit id, and the comma before it.
 */
export const NOTE_JSON_OVERHEAD = 88;
/**
 * The most notes a chunk can hold. Only the sizes of these rows are read to find where a chunk ends, so
 * after the first chunk the count follows the sizes seen so far (twice what fits): no scanning 17,000
 * sizes for a chunk of 1,300 notes of 1 KiB.
 */
const MAX_CHUNK_ROWS = Math.ceil(LIST_CHUNK_BYTES / NOTE_JSON_OVERHEAD);
const MIN_CHUNK_ROWS = 100;

/** The condition that limits a query to one owner's notes; none when notes are public (NOTES_AUTH=off). */
export function ownedBy(owner: number | SQL<number> | undefined): SQL | undefined {
  return owner === undefined ? undefined : eq(notes.userId, owner);
}


/** Which notes a chunk query looks at: ids above `after` and up to `upTo`. */
export interface ListRange {
  after: number;
  upTo: number;
}

/** The whole list's range. */
export const EVERY_ID: ListRange = { after: Number.MIN_SAFE_INTEGER, upTo: Number.MAX_SAFE_INTEGER };

/** One chunk as SQLite returns it. */
export interface Chunk {
  /** The notes' JSON objects joined by commas, by id; null when the range holds no note. */
  items: string | null;
  /** The id of the chunk's last note. */
  last: number | null;
  /** The id of the last of the first `rows` notes of the range (the page), whether they all fit or not. */
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

/**
 * The next chunk of the list in one statement. The first `rows` notes of the range (the page) are sized
 * from their stored lengths alone (SQLite reads a value's length from the row header, without its
 * content); when the whole page fits `budget` bytes it is the chunk. When it does not, `prefix` says
 * what happens: a running sum finds the longest prefix that fits (at least one note), or, without
 * `prefix`, the chunk is empty (`last` and `items` null, `pageCount` above 0) and the caller asks again
 * with it (`listNotes`). SQLite writes the chunk's JSON. So no query reads more content than one chunk's,
 * and the Worker only passes the text on.
 *
 * The running sum (a window function) is written in the branch taken only when the page does not fit,
 * and only in the statement that needs it: D1 compiles every statement it runs, and that branch costs
 * SQLite about as much to compile, and to start even when it is not taken, as the rest of the statement
 * (docs/performance.md). `group_concat` follows the scan, which runs by id: the rowid range, or with an
 * owner the (user_id, id) index.
 *
 * Compiled once per isolate (db/compiled.ts) for public notes and for one owner's; the first chunk runs
 * in one round trip with the check of the caller's session.
 */
function chunkOf(db: Database, p: Placeholders<ChunkValues>, prefix: boolean, owner?: SQL<number>) {
  const within = (lo: SQL, hi: SQL) => and(gt(notes.id, lo), lte(notes.id, hi), ownedBy(owner));
  const page = sql`SELECT ${notes.id} AS id, octet_length(${notes.title}) + octet_length(${notes.content}) + ${NOTE_JSON_OVERHEAD} AS size
    FROM ${notes} WHERE ${within(p.after, p.upTo)} ORDER BY ${notes.id} LIMIT ${p.rows}`;
  const longestPrefix = sql`(
    SELECT coalesce(max(id) FILTER (WHERE reach <= ${p.budget}), min(id))
    FROM (SELECT id, sum(size) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) AS reach FROM (${page}))
  )`;
  const cut = sql`(
    SELECT
      CASE WHEN bytes <= ${p.budget} THEN page_last ${prefix ? sql`ELSE ${longestPrefix} ` : sql``}END AS last,
      page_last, page_count, bytes
    FROM (SELECT max(id) AS page_last, count(*) AS page_count, sum(size) AS bytes FROM (${page}))
  ) AS cut`;
  return db
    .select({
      items: sql<string | null>`(SELECT group_concat(${noteJsonText}, ',') FROM ${notes} WHERE ${within(p.after, sql`cut.last`)})`.as("items"),
      last: sql<number | null>`last`.as("last"),
      pageLast: sql<number | null>`page_last`.as("pageLast"),
      pageCount: sql<number>`page_count`.as("pageCount"),
      pageBytes: sql<number | null>`bytes`.as("pageBytes"),
      beyondPage: sql<number>`EXISTS (SELECT 1 FROM ${notes} WHERE ${within(sql`cut.page_last`, p.upTo)})`.as("beyondPage"),
      // Read in the same statement as the notes: the list's ETag is never newer than what it lists.
      version: listVersion(owner).as("version"),
    })
    .from(cut);
}

/** A chunk: the whole page when it fits the budget, otherwise its longest prefix that does. */
export const chunkQuery = forCallerOf((db, p: Placeholders<ChunkValues>, caller) => chunkOf(db, p, true, caller?.userId));
/** The whole page as a chunk when it fits the budget; otherwise an empty chunk (`last` null). */
export const wholePageQuery = forCallerOf((db, p: Placeholders<ChunkValues>, caller) => chunkOf(db, p, false, caller?.userId));

/** True for D1's SQLITE_TOOBIG: a value (here a chunk's JSON) over its string size limit. */
function isTooBig(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) if (e.message.includes("SQLITE_TOOBIG")) return true;
  return false;
}

/** The reason the body stream fails with when a later chunk fails. */
export const LIST_ABORTED = "Listing notes failed after the response had started";

const encoder = new TextEncoder();

/** What GET /notes answers: the JSON array, and for a page with more notes after it, its last id. */
export interface NotesList {
  body: string | ReadableStream<Uint8Array>;
  /** The `after` of the next page; set only for a page (`limit`) with more notes after it. */
  nextAfter: number | undefined;
  /** The version of the caller's notes when the list was read (its first chunk): the list's ETag. */
  version: number;
}

/**
 * The notes as one JSON array by id ascending: all of them, or with `limit` one page of at most `limit`
 * notes after `after`. Read from D1 in chunks of about LIST_CHUNK_BYTES of JSON (`chunkQuery`), each query
 * made only once the client has taken the previous chunk, so memory and the time any one query holds the
 * database stay bounded whatever the number and size of the notes.
 *
 * The first chunk is read before the stream exists: if it fails, this throws and the request gets the
 * ordinary 500. A later failure can no longer change the status (200 is sent), so it is logged and the
 * stream is aborted: the client sees a broken response, never a truncated array that parses.
 * A list that fits in one chunk costs exactly one query and is answered as one string. With NOTES_AUTH
 * required, the first chunk is read in one round trip with the check of the caller's session, and the
 * answer is undefined when that session is not live.
 */
export async function listNotes(
  db: Database,
  log: Logger,
  caller: AccessClaims | undefined,
  now: number,
  page: { limit: number; after: number | undefined } | undefined,
): Promise<NotesList | undefined> {
  /**
   * One chunk; `first` puts the caller's session check in the same round trip. A page's first chunk is
   * asked for whole (`wholePageQuery`): nearly every page fits the budget, and without the running sum
   * the statement costs SQLite far less. A page that does not fit is asked for again, by prefix.
   */
  const fetchChunk = async (range: ListRange, rows: number, first = false): Promise<Chunk | undefined> => {
    const run = async (statement: typeof chunkQuery, budget: number, check: boolean) => {
      const query = statement(db, caller, now, { ...range, rows, budget });
      return (await (check ? asCaller(db, caller, now, query) : rowsOf(query)))?.[0];
    };
    const read = async (budget: number) => {
      if (!(first && page)) return run(chunkQuery, budget, first);
      const whole = await run(wholePageQuery, budget, true);
      return whole?.last === null && whole.pageCount > 0 ? run(chunkQuery, budget, false) : whole;
    };
    try {
      return await read(LIST_CHUNK_BYTES);
    } catch (err) {
      // Text full of escapes made the JSON longer than estimated: the same notes again in chunks that fit.
      if (!isTooBig(err)) throw err;
      return read(SAFE_CHUNK_BYTES);
    }
  };

  // A page reads its `limit` notes and no further: later chunks stop at the page's last note.
  let rows = page?.limit ?? MAX_CHUNK_ROWS;
  const first = await fetchChunk({ after: page?.after ?? EVERY_ID.after, upTo: EVERY_ID.upTo }, rows, true);
  if (!first) return undefined;
  const upTo = page ? (first.pageLast ?? EVERY_ID.upTo) : EVERY_ID.upTo;
  const nextAfter = page && first.beyondPage ? (first.pageLast ?? undefined) : undefined;
  const more = (chunk: Chunk) => chunk.last !== null && (chunk.last !== chunk.pageLast || (!page && chunk.beyondPage === 1));
  // The next page: twice as many notes as the last page's average size fits in a chunk.
  const grow = (chunk: Chunk) =>
    page || !chunk.pageBytes ? rows : Math.min(MAX_CHUNK_ROWS, Math.max(MIN_CHUNK_ROWS, Math.ceil((2 * LIST_CHUNK_BYTES * chunk.pageCount) / chunk.pageBytes)));

  // A list that fits one chunk is the whole answer already: no stream needed.
  if (!more(first)) return { body: `[${first.items ?? ""}]`, nextAfter, version: first.version };

  // Only the first chunk's bytes and last id outlive this block: the closures below do not keep its text.
  let after = first.last!;
  const { version } = first;
  rows = grow(first);
  let head: Uint8Array | null = encoder.encode(`[${first.items}`);
  let cancelled = false;

  // Pull-based with the default high-water mark of one chunk: the next query runs only once the client
  // (or the runtime sending the body) has taken the previous chunk, so at most one chunk waits in memory.
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (head) controller.enqueue(head);
      head = null;
    },
    async pull(controller) {
      try {
        const chunk = (await fetchChunk({ after, upTo }, rows))!;
        if (cancelled) return;
        const isLast = !more(chunk);
        after = chunk.last ?? after;
        rows = grow(chunk);
        controller.enqueue(encoder.encode(`${chunk.items === null ? "" : `,${chunk.items}`}${isLast ? "]" : ""}`));
        if (isLast) controller.close();
      } catch (err) {
        if (cancelled) return;
        log.error("list_stream_failed", describeError(err));
        // The runtime logs the reason a response body failed with, and Drizzle's errors carry the SQL and
        // its parameters: the stream fails with a neutral error, the details are in the line above.
        controller.error(new Error(LIST_ABORTED));
      }
    },
    cancel() {
      cancelled = true;
    },
  });
  return { body, nextAfter, version };
}
