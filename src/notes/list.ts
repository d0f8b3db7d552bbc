import { asCaller } from "./runner";
import { rowsOf } from "../db/compiled";
import { describeError, type Logger } from "../lib/log";
import type { AccessClaims } from "../lib/access-token";
import type { Database } from "../types";
import { EVERY_ID, ownList, sharedList, type Chunk, type ListRange, type ListStatements } from "./list-queries";
import { LIST_CHUNK_BYTES, NOTE_JSON_OVERHEAD } from "./sql";

/**
 * GET /notes: the notes as one JSON array, read in chunks that SQLite sizes and writes (list-queries.ts),
 * and streamed when they do not fit one.
 */

/**
 * The estimate is exact for text without escapes; JSON escaping makes a character at most 6 bytes
 * (`\u0001`), so a chunk estimated at a sixth of the budget always fits. Used again for a chunk whose JSON
 * came out too long.
 */
const SAFE_CHUNK_BYTES = Math.floor(LIST_CHUNK_BYTES / 6);
/** The most notes a chunk can hold (none is smaller than NOTE_JSON_OVERHEAD): the most rows a query sizes. */
const MAX_CHUNK_ROWS = Math.ceil(LIST_CHUNK_BYTES / NOTE_JSON_OVERHEAD);

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

/** One listing in progress: whose notes, what to ask next, and where the stream stands. */
interface Listing {
  /** Whose notes: the caller's own, or those shared with it. */
  statements: ListStatements;
  db: Database;
  caller: AccessClaims | undefined;
  now: number;
  ask: Ask;
  /** What is left to list: ids above `after` (the last note sent) and up to `upTo`. */
  range: ListRange;
  /** The latest answer not yet sent (the first query's, at the start); never a chunk once enqueued. */
  pending: Chunk | undefined;
  /** Whether the array's `[` was sent. */
  opened: boolean;
  cancelled: boolean;
}

/** How many notes of the chunk's average size fit `budget`: at least one, at most MAX_CHUNK_ROWS. */
function rowsFitting(chunk: Chunk, budget: number): number {
  return Math.min(MAX_CHUNK_ROWS, Math.max(1, Math.floor((budget * chunk.pageCount) / (chunk.pageBytes ?? 1))));
}

/** True when the chunk is an answer: its notes fitted, or there were none. */
const answered = (chunk: Chunk) => chunk.last !== null || chunk.pageCount === 0;

/** One query, for the listing's ask; `check` puts the caller's session check in the same round trip. */
async function readChunk(listing: Listing, check = false): Promise<Chunk | undefined> {
  const { db, caller, now, ask } = listing;
  const query = listing.statements.chunkQuery(db, caller, now, {
    ...listing.range,
    rows: ask.rows,
    budget: ask.budget,
  });
  try {
    return (await (check ? asCaller(db, caller, now, query) : rowsOf(query)))?.[0];
  } catch (err) {
    // Text full of escapes made the JSON longer than estimated: the same notes again in chunks that fit.
    if (!isTooBig(err) || ask.budget !== LIST_CHUNK_BYTES) throw err;
    listing.ask = { ...ask, budget: SAFE_CHUNK_BYTES, basis: "guess" };
    return readChunk(listing, check);
  }
}

/** What to ask after the listing's ask was answered by notes that do not fit (`over`): fewer of them. */
async function fewer(listing: Listing, over: Chunk): Promise<Ask> {
  const { db, caller, now, ask } = listing;
  if (ask.basis === "guess") return { rows: rowsFitting(over, ask.budget), budget: ask.budget, basis: "average" };
  const [fit] = await rowsOf(
    listing.statements.fittingRowsQuery(db, caller, now, { ...listing.range, rows: ask.rows, budget: ask.budget }),
  );
  // A single note over the budget (only the smaller budget for escapes can be that small) goes alone.
  return { rows: fit!.rows, budget: fit!.rows === 1 ? Number.MAX_SAFE_INTEGER : ask.budget, basis: "exact" };
}

/** The next chunk whose notes fit, asking for fewer until they do; undefined once the client has gone. */
async function nextFitting(listing: Listing): Promise<Chunk | undefined> {
  for (;;) {
    const chunk = listing.pending ?? (await readChunk(listing))!;
    listing.pending = undefined;
    if (listing.cancelled) return undefined;
    if (answered(chunk)) return chunk;
    listing.ask = await fewer(listing, chunk);
  }
}

/**
 * The chunk's piece of the array, the listing moved past it; whether it is the last piece. After a chunk,
 * the first guess is as many notes as fit if they are like its notes.
 */
function pieceOf(listing: Listing, chunk: Chunk): { text: string; isLast: boolean } {
  let text = "";
  if (chunk.items !== null) {
    text = `${listing.opened ? "," : "["}${chunk.items}`;
    listing.opened = true;
    listing.range = { ...listing.range, after: chunk.last! };
    listing.ask = { rows: rowsFitting(chunk, LIST_CHUNK_BYTES), budget: LIST_CHUNK_BYTES, basis: "guess" };
  }
  const isLast = chunk.items === null || !chunk.beyondPage;
  return { text: isLast ? `${text}${listing.opened ? "]" : "[]"}` : text, isLast };
}

/**
 * The rest of the list as a stream, from the first query's answer on. Pull-based with a high-water mark
 * of zero: a query runs only when the client (or the runtime sending the body) asks for the next chunk,
 * so no chunk waits in memory.
 */
function streamOf(listing: Listing, log: Logger): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const chunk = await nextFitting(listing);
          if (!chunk) return;
          const { text, isLast } = pieceOf(listing, chunk);
          controller.enqueue(encoder.encode(text));
          if (isLast) controller.close();
        } catch (err) {
          if (listing.cancelled) return;
          log.error("list_stream_failed", describeError(err));
          // The runtime logs the reason a response body failed with, and Drizzle's errors carry the SQL and
          // its parameters: the stream fails with a neutral error, the details are in the line above.
          controller.error(new Error(LIST_ABORTED));
        }
      },
      cancel() {
        listing.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * The notes as one JSON array by id ascending (the caller's own, or with `shared` those shared with it): all of
 * them, or with `limit` one page of at most `limit`
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
  shared = false,
): Promise<NotesList | undefined> {
  const ask: Ask = { rows: page?.limit ?? MAX_CHUNK_ROWS, budget: LIST_CHUNK_BYTES, basis: "guess" };
  const range = { after: page?.after ?? EVERY_ID.after, upTo: EVERY_ID.upTo };
  const statements = shared ? sharedList : ownList;
  const listing: Listing = {
    statements,
    db,
    caller,
    now,
    ask,
    range,
    pending: undefined,
    opened: false,
    cancelled: false,
  };
  const first = await readChunk(listing, true);
  if (!first) return undefined;
  const { version } = first;
  const nextAfter = page && first.beyondPage ? (first.pageLast ?? undefined) : undefined;
  // The whole page, or the whole list, in one query: no stream needed.
  if (answered(first) && (page || !first.beyondPage)) return { body: `[${first.items ?? ""}]`, nextAfter, version };
  // A page reads its `limit` notes and no further: later queries stop at the page's last note.
  if (page) listing.range = { ...range, upTo: first.pageLast ?? EVERY_ID.upTo };
  listing.pending = first;
  return { body: streamOf(listing, log), nextAfter, version };
}
