import { asc, gt } from "drizzle-orm";
import { notes, type Note } from "../db/schema";
import { describeError, type Logger } from "../lib/log";
import type { Database } from "../types";

/**
 * Notes per D1 query when listing. At about 1 KiB a note, a chunk is about 0.5 MB of JSON: the Worker
 * holds one chunk's rows, JSON and bytes at a time (a few MB, far below the 128 MB limit), and 100,000
 * notes take 200 round trips, so D1 latency rather than memory sets the time of a long list. The bound
 * is per chunk, so it grows with note size: 500 notes near the 1 MiB request-body limit would be
 * hundreds of MB; only a byte budget per chunk, not a smaller count, would bound that case too.
 */
export const LIST_CHUNK_SIZE = 500;

/** The notes after `after` (from the first when undefined), by id ascending: one D1 round trip. */
function fetchChunk(db: Database, after: number | undefined): Promise<Note[]> {
  return db
    .select()
    .from(notes)
    .where(after === undefined ? undefined : gt(notes.id, after))
    .orderBy(asc(notes.id))
    .limit(LIST_CHUNK_SIZE);
}

/** The reason the body stream fails with when a later chunk fails. */
export const LIST_ABORTED = "Listing notes failed after the response had started";

const encoder = new TextEncoder();

/** One piece of the JSON array: `[` before the first page, `,` between notes and pages, `]` after the last. */
function encodeChunk(rows: Note[], render: (note: Note) => unknown, isFirst: boolean, isLast: boolean): Uint8Array {
  const items = rows.map((note) => JSON.stringify(render(note))).join(",");
  const separator = isFirst ? "[" : items === "" ? "" : ",";
  return encoder.encode(separator + items + (isLast ? "]" : ""));
}

/**
 * Every note as one JSON array, by id ascending, read from D1 in keyset-paged chunks
 * (`WHERE id > <last id sent> ORDER BY id LIMIT <chunk>`) as the client reads, so memory stays bounded
 * whatever the number of notes.
 *
 * The first chunk is read before the stream exists: if it fails, this throws and the request gets the
 * ordinary 500. A later failure can no longer change the status (200 is sent), so it is logged and the
 * stream is aborted: the client sees a broken response, never a truncated array that parses.
 * A list shorter than one chunk costs exactly one query.
 */
export async function streamNotes(db: Database, log: Logger, render: (note: Note) => unknown): Promise<ReadableStream<Uint8Array>> {
  // Only the first chunk's bytes and last id outlive this block: the closures below do not keep its rows.
  const firstRows = await fetchChunk(db, undefined);
  const complete = firstRows.length < LIST_CHUNK_SIZE;
  let lastId = firstRows.at(-1)?.id;
  let head: Uint8Array | undefined = encodeChunk(firstRows, render, true, complete);
  let cancelled = false;

  // Pull-based with the default high-water mark of one chunk: the next query runs only once the client
  // (or the runtime sending the body) has taken the previous chunk, so at most one chunk waits in memory.
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(head!);
      head = undefined;
      if (complete) controller.close();
    },
    async pull(controller) {
      try {
        const rows = await fetchChunk(db, lastId);
        if (cancelled) return;
        lastId = rows.at(-1)?.id ?? lastId;
        const isLast = rows.length < LIST_CHUNK_SIZE;
        controller.enqueue(encodeChunk(rows, render, false, isLast));
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
