import { and, asc, eq, gt, sql, type SQL } from "drizzle-orm";
import { batchable } from "../db/raw";
import { notes, type Note } from "../db/schema";
import { asCaller } from "../auth/session-store";
import { describeError, type Logger } from "../lib/log";
import type { AccessClaims } from "../lib/tokens";
import type { Database } from "../types";
import { noteJson } from "./schemas";

/**
 * Notes per D1 query when listing. At about 1 KiB a note, a chunk is about 0.5 MB of JSON: 100,000 notes
 * take 200 round trips, so D1 latency rather than memory sets the time of a long list.
 */
export const LIST_CHUNK_SIZE = 1000;
/**
 * ...and at most about this many characters of title and content per chunk (one note more at most), so
 * large notes (up to the 1 MiB body limit each) cannot make a chunk of hundreds of MB. The Worker holds
 * one chunk's rows, JSON and bytes at a time: a few tens of MB at worst, well under its 128 MB.
 */
export const LIST_CHUNK_CHARS = 4_000_000;

interface ChunkRow {
  id: number;
  title: string;
  content: string;
  created_at: number;
  user_id: number | null;
  /** Characters of title and content up to and including this row, within the chunk. */
  running: number;
}

/**
 * The notes after `after` by id ascending, at most LIST_CHUNK_SIZE of them and no more than start within
 * LIST_CHUNK_CHARS: one D1 round trip.
 */
function chunkQuery(db: Database, owner: number | undefined, after: number) {
  const ofOwner = owner === undefined ? sql`` : sql`AND user_id = ${owner}`;
  return batchable(db, db.all<ChunkRow>(sql`
    SELECT id, title, content, created_at, user_id, running FROM (
      SELECT *, SUM(length(title) + length(content)) OVER (ORDER BY id) AS running
      FROM (SELECT * FROM ${notes} WHERE id > ${after} ${ofOwner} ORDER BY id LIMIT ${LIST_CHUNK_SIZE + 1})
    )
    WHERE running - (length(title) + length(content)) < ${LIST_CHUNK_CHARS}
    ORDER BY id`));
}

/** A chunk's rows as notes; `more` is false once the table has nothing after the last row. */
function toChunk(rows: ChunkRow[]): { rows: Note[]; more: boolean } {
  // One row past a full chunk only tells that there is more: it is sent with the next chunk, so a list
  // of exactly LIST_CHUNK_SIZE notes costs one query, not a second, empty one.
  const fullChunk = rows.length > LIST_CHUNK_SIZE;
  if (fullChunk) rows.pop();
  const last = rows.at(-1);
  return {
    rows: rows.map((row) => ({
      id: row.id,
      title: row.title,
      content: row.content,
      createdAt: new Date(row.created_at),
      userId: row.user_id,
    })),
    // Otherwise only a chunk cut by the size budget may have more after it.
    more: fullChunk || (last !== undefined && last.running >= LIST_CHUNK_CHARS),
  };
}

/** The condition that limits a query to the caller's notes; none when notes are public (NOTES_AUTH=off). */
export function ownedBy(caller: AccessClaims | undefined): SQL | undefined {
  return caller === undefined ? undefined : eq(notes.userId, caller.userId);
}

/** The reason the body stream fails with when a later chunk fails. */
export const LIST_ABORTED = "Listing notes failed after the response had started";

const encoder = new TextEncoder();

/** One piece of the JSON array: `[` before the first page, `,` between notes and pages, `]` after the last. */
function encodeChunk(rows: Note[], isFirst: boolean, isLast: boolean): string {
  const items = rows.map((note) => JSON.stringify(noteJson(note))).join(",");
  const separator = isFirst ? "[" : items === "" ? "" : ",";
  return separator + items + (isLast ? "]" : "");
}

/**
 * Every note as one JSON array, by id ascending, read from D1 in keyset-paged chunks
 * (`WHERE id > <last id sent> ORDER BY id LIMIT <chunk>`) as the client reads, so memory stays bounded
 * whatever the number of notes.
 *
 * The first chunk is read before the stream exists: if it fails, this throws and the request gets the
 * ordinary 500. A later failure can no longer change the status (200 is sent), so it is logged and the
 * stream is aborted: the client sees a broken response, never a truncated array that parses.
 * A list that fits in one chunk costs exactly one query and is answered as one string.
 */
export async function streamNotes(
  db: Database,
  log: Logger,
  caller: AccessClaims | undefined,
  now: number,
): Promise<string | ReadableStream<Uint8Array> | undefined> {
  const owner = caller?.userId;
  // The first chunk is read in one round trip with the check of the caller's session.
  const firstRows = await asCaller(db, caller, now, chunkQuery(db, owner, Number.MIN_SAFE_INTEGER));
  if (!firstRows) return undefined;
  const first = toChunk(firstRows);
  // A list that fits one chunk is the whole answer already: no stream needed.
  if (!first.more) return encodeChunk(first.rows, true, true);

  // Only the first chunk's bytes and last id outlive this block: the closures below do not keep its rows.
  let lastId = first.rows.at(-1)?.id ?? Number.MIN_SAFE_INTEGER;
  let head: Uint8Array | null = encoder.encode(encodeChunk(first.rows, true, false));
  let cancelled = false;

  // Pull-based with the default high-water mark of one chunk: the next query runs only once the client
  // (or the runtime sending the body) has taken the previous chunk, so at most one chunk waits in memory.
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (head) controller.enqueue(head);
      head = null;
    },
    async pull(controller) {
      try {
        const { rows, more } = toChunk(await chunkQuery(db, owner, lastId));
        if (cancelled) return;
        lastId = rows.at(-1)?.id ?? lastId;
        const isLast = !more;
        controller.enqueue(encoder.encode(encodeChunk(rows, false, isLast)));
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
}

/**
 * One page of `limit` notes after `after` (a whole-list answer when `after` is undefined), by id: one
 * query for `limit + 1` rows, the extra one only telling whether a next page exists.
 */
export async function listPage(
  db: Database,
  caller: AccessClaims | undefined,
  now: number,
  limit: number,
  after: number | undefined,
): Promise<{ notes: Note[]; hasMore: boolean } | undefined> {
  const rows = await asCaller(
    db,
    caller,
    now,
    db
      .select()
      .from(notes)
      .where(and(ownedBy(caller), after === undefined ? undefined : gt(notes.id, after)))
      .orderBy(asc(notes.id))
      .limit(limit + 1),
  );
  return rows && { notes: rows.slice(0, limit), hasMore: rows.length > limit };
}
