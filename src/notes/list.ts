import { and, gt, lte, sql, type SQL } from "drizzle-orm";
import { asCaller, forCallerOf } from "../auth/caller";
import { rowsOf, type Placeholders } from "../db/compiled";
import { notes } from "../db/schema";
import { describeError, type Logger } from "../lib/log";
import type { AccessClaims } from "../lib/access-token";
import type { Database } from "../types";
import { visibleTo, type NotesCaller } from "./access";
import { listVersion } from "./conditional";
import { LIST_CHUNK_BYTES, NOTE_JSON_OVERHEAD, noteJsonText, noteSize } from "./sql";
/**
 * The estimate is exact for text without escapes; JSON escaping makes a character at most 6 bytes
 * (`\u0001`), so a chunk estimated at a sixth of the budget always fits. Used again for a chunk whose JSON
 * came out too long.
 */
const SAFE_CHUNK_BYTES = Math.floor(LIST_CHUNK_BYTES / 6);
/** The most notes a chunk can hold (none is smaller than NOTE_JSON_OVERHEAD): the most rows a query sizes. */
const MAX_CHUNK_ROWS = Math.ceil(LIST_CHUNK_BYTES / NOTE_JSON_OVERHEAD);

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

/** The notes with ids above `lo` and up to `hi` that the caller sees. */
const between = (lo: SQL, hi: SQL, caller: NotesCaller) => and(gt(notes.id, lo), lte(notes.id, hi), visibleTo(caller));

/**
 * The first `rows` notes of the range (the page), as a condition: ids up to the `rows`-th, found from the
 * index (or the rowids) without reading a note, or the whole range when it holds fewer. Not an ordered
 * `LIMIT ?` subquery: SQLite compiles a statement again whenever a bare `LIMIT ?` is bound, which nearly
 * doubled the time of a page's statement (docs/performance.md).
 */
function pageOf(p: Placeholders<ChunkValues>, caller: NotesCaller) {
  const end = sql`(SELECT ${notes.id} FROM ${notes} WHERE ${between(p.after, p.upTo, caller)} ORDER BY ${notes.id} LIMIT 1 OFFSET ${p.rows} - 1)`;
  return between(p.after, sql`coalesce(${end}, ${p.upTo})`, caller);
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
 * Compiled once per isolate (db/compiled.ts) for public notes and for one owner's; the first query runs
 * in one round trip with the check of the caller's session.
 */
export const chunkQuery = forCallerOf((db, p: Placeholders<ChunkValues>, caller) => {
  const cut = sql`(
    SELECT CASE WHEN bytes <= ${p.budget} THEN page_last END AS last, page_last, page_count, bytes
    FROM (SELECT max(${notes.id}) AS page_last, count(*) AS page_count, sum(${noteSize}) AS bytes FROM ${notes} WHERE ${pageOf(p, caller)})
  ) AS cut`;
  return db
    .select({
      items: sql<string | null>`(SELECT group_concat(${noteJsonText}, ',') FROM ${notes} WHERE ${between(p.after, sql`cut.last`, caller)})`.as("items"),
      last: sql<number | null>`last`.as("last"),
      pageLast: sql<number | null>`page_last`.as("pageLast"),
      pageCount: sql<number>`page_count`.as("pageCount"),
      pageBytes: sql<number | null>`bytes`.as("pageBytes"),
      beyondPage: sql<number>`EXISTS (SELECT 1 FROM ${notes} WHERE ${between(sql`cut.page_last`, p.upTo, caller)})`.as("beyondPage"),
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
export const fittingRowsQuery = forCallerOf((db, p: Placeholders<ChunkValues>, caller) =>
  db
    .select({ rows: sql<number>`max(1, count(*) FILTER (WHERE reach <= ${p.budget}))`.as("rows") })
    .from(sql`(SELECT sum(${noteSize}) OVER (ORDER BY ${notes.id} ROWS UNBOUNDED PRECEDING) AS reach FROM ${notes} WHERE ${pageOf(p, caller)})`),
);

/** True for D1's SQLITE_TOOBIG: a value (here a chunk's JSON) over its string size limit. */
function isTooBig(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) if (e.message.includes("SQLITE_TOOBIG")) return true;
  return false;
}

/** The reason the body stream fails with when a query after the first fails. */
export const LIST_ABORTED = "Listing notes failed after the response had started";

const encoder = new TextEncoder();

/** What GET /notes answers: the JSON array, and for a page with more notes after it, its last id. */
export interface NotesList {
  body: string | ReadableStream<Uint8Array>;
  /** The `after` of the next page; set only for a page (`limit`) with more notes after it. */
  nextAfter: number | undefined;
  /** The version of the caller's notes when the list was read (its first query): the list's ETag. */
  version: number;
}

/** What to ask D1 for next: the first `rows` notes of what is left, within `budget` bytes of JSON. */
interface Ask {
  rows: number;
  budget: number;
  /**
   * Where `rows` came from: a guess (the page's size, or what fitted the last chunk), as many as fit if
   * these notes are of average size, or exactly as many as fit (`fittingRowsQuery`).
   */
  basis: "guess" | "average" | "exact";
}

/** How many notes of the chunk's average size fit `budget`: at least one, at most MAX_CHUNK_ROWS. */
function rowsFitting(chunk: Chunk, budget: number): number {
  return Math.min(MAX_CHUNK_ROWS, Math.max(1, Math.floor((budget * chunk.pageCount) / (chunk.pageBytes ?? 1))));
}

/** True when the chunk is an answer: its notes fitted, or there were none. */
const answered = (chunk: Chunk) => chunk.last !== null || chunk.pageCount === 0;

/**
 * The notes as one JSON array by id ascending: all of them, or with `limit` one page of at most `limit`
 * notes after `after`. Read from D1 in chunks of about LIST_CHUNK_BYTES of JSON (`chunkQuery`), each query
 * made only when the client asks for more, so memory and the time any one query holds the database stay
 * bounded whatever the number and size of the notes.
 *
 * The first query asks for the whole list (or page): nearly every page and most lists fit one chunk, and
 * are answered as one string from that one query. A list that does not fit gets from it only the count
 * and size of its first notes, and streams: each later query asks for as many notes as fit on average
 * (exact for notes of one size), then, if they did not fit, for exactly as many as fit (`fittingRowsQuery`).
 * So no query reads more than one chunk's content, and the window function that finds an exact fit runs
 * only for notes of very different sizes.
 *
 * The first query runs before the stream exists: if it fails, this throws and the request gets the
 * ordinary 500. A later failure can no longer change the status (200 is sent), so it is logged and the
 * stream is aborted: the client sees a broken response, never a truncated array that parses. With
 * NOTES_AUTH required, the first query runs in one round trip with the check of the caller's session,
 * and the answer is undefined when that session is not live.
 */
export async function listNotes(
  db: Database,
  log: Logger,
  caller: AccessClaims | undefined,
  now: number,
  page: { limit: number; after: number | undefined } | undefined,
): Promise<NotesList | undefined> {
  let ask: Ask = { rows: page?.limit ?? MAX_CHUNK_ROWS, budget: LIST_CHUNK_BYTES, basis: "guess" };
  /** One query, for `ask`; `check` puts the caller's session check in the same round trip. */
  const read = async (range: ListRange, check = false): Promise<Chunk | undefined> => {
    const query = chunkQuery(db, caller, now, { ...range, rows: ask.rows, budget: ask.budget });
    try {
      return (await (check ? asCaller(db, caller, now, query) : rowsOf(query)))?.[0];
    } catch (err) {
      // Text full of escapes made the JSON longer than estimated: the same notes again in chunks that fit.
      if (!isTooBig(err) || ask.budget !== LIST_CHUNK_BYTES) throw err;
      ask = { ...ask, budget: SAFE_CHUNK_BYTES, basis: "guess" };
      return read(range, check);
    }
  };
  /** What to ask after `ask` was answered by notes that do not fit (`over`): fewer of them. */
  const fewer = async (range: ListRange, over: Chunk): Promise<Ask> => {
    if (ask.basis === "guess") return { rows: rowsFitting(over, ask.budget), budget: ask.budget, basis: "average" };
    const [fit] = await rowsOf(fittingRowsQuery(db, caller, now, { ...range, rows: ask.rows, budget: ask.budget }));
    // A single note over the budget (only the smaller budget for escapes can be that small) goes alone.
    return { rows: fit!.rows, budget: fit!.rows === 1 ? Number.MAX_SAFE_INTEGER : ask.budget, basis: "exact" };
  };
  /** The first guess after an answered chunk: as many notes as fit if they are like its notes. */
  const following = (chunk: Chunk): Ask => ({ rows: rowsFitting(chunk, LIST_CHUNK_BYTES), budget: LIST_CHUNK_BYTES, basis: "guess" });

  let after = page?.after ?? EVERY_ID.after;
  const first = await read({ after, upTo: EVERY_ID.upTo }, true);
  if (!first) return undefined;
  const { version } = first;
  // A page reads its `limit` notes and no further: later queries stop at the page's last note.
  const upTo = page ? (first.pageLast ?? EVERY_ID.upTo) : EVERY_ID.upTo;
  const nextAfter = page && first.beyondPage ? (first.pageLast ?? undefined) : undefined;
  // The whole page, or the whole list, in one query: no stream needed.
  if (answered(first) && (page || !first.beyondPage)) return { body: `[${first.items ?? ""}]`, nextAfter, version };

  // The stream starts from the first query's answer; after that it keeps only the latest answer not yet
  // sent, never a chunk's text once it has been enqueued.
  let pending: Chunk | undefined = first;
  let opened = false;
  let cancelled = false;

  // Pull-based with a high-water mark of zero: a query runs only when the client (or the runtime sending
  // the body) asks for the next chunk, so no chunk waits in memory.
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          let chunk: Chunk;
          for (;;) {
            const range = { after, upTo };
            chunk = pending ?? (await read(range))!;
            pending = undefined;
            if (cancelled) return;
            if (answered(chunk)) break;
            ask = await fewer(range, chunk);
          }
          let text = "";
          if (chunk.items !== null) {
            text = `${opened ? "," : "["}${chunk.items}`;
            opened = true;
            after = chunk.last!;
            ask = following(chunk);
          }
          const isLast = chunk.items === null || !chunk.beyondPage;
          controller.enqueue(encoder.encode(isLast ? `${text}${opened ? "]" : "[]"}` : text));
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
    },
    { highWaterMark: 0 },
  );
  return { body, nextAfter, version };
}
