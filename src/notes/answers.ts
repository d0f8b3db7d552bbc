import type { Context, TypedResponse } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Bound } from "../db/compiled";
import { asCaller } from "./runner";
import { etagListed, etagOf, listETag, readETags, readListVersion } from "./conditional";
import { createOnce, IDEMPOTENT_REPLAYED_HEADER } from "./idempotency";
import { listNotes } from "./list";
import { NoteMessage } from "./messages";
import { notesUnauthorized, type NotesEnv } from "./require-auth";
import { readNote } from "./queries";
import type { NoteJson } from "./requests";
import { searchNotes } from "./search";

/**
 * The answers of the notes routes (routes.ts, changes.ts), typed for the typed client: each is what a
 * handler returns, so the app's type lists every status and body it can answer.
 */

/** The spec's 404 for a note that does not exist. */
export const notFound = (c: Context) => c.json({ error: NoteMessage.notFound }, 404);

/** JSON that SQLite wrote, passed on as it is; typed as the JSON it holds, for the typed client. */
export function jsonText<T, U extends ContentfulStatusCode>(
  c: Context,
  body: string | ReadableStream<Uint8Array>,
  status: U,
) {
  return c.body(body, status, { "Content-Type": "application/json" }) as unknown as Response &
    TypedResponse<T, U, "json">;
}

/** A note's answer: its JSON as SQLite wrote it, and its ETag. */
export function noteAnswer<U extends 200 | 201>(c: Context, note: { json: string; revision: number }, status: U) {
  c.header("ETag", etagOf(note.revision));
  return jsonText<NoteJson, U>(c, note.json, status);
}

/** 304: the client's copy is current; no body, the ETag it matched. */
export function notModified(c: Context, etag: string) {
  c.header("ETag", etag);
  return c.body(null, 304);
}

/** 412: the note exists at another revision than If-Match names; nothing was changed. Its current ETag. */
export function preconditionFailed(c: Context, revision: number) {
  c.header("ETag", etagOf(revision));
  return c.json({ error: NoteMessage.preconditionFailed }, 412);
}

/**
 * Why a conditional PATCH or DELETE wrote nothing: the note is gone (the spec's 404) or at another
 * revision (412). Read after the write, only to choose the answer: the write itself decided.
 */
export async function whyNotWritten(c: Context<NotesEnv>, id: number, now: number) {
  const { db, caller } = c.var;
  const found = await asCaller(db, caller, now, readNote(db, id, caller, now));
  if (!found) return notesUnauthorized(c);
  return found[0] ? preconditionFailed(c, found[0].revision) : notFound(c);
}

/** A search page (`q`), `pageSize` ranked notes after `offset`, and the next page in `Link`. */
export async function searchAnswer(c: Context<NotesEnv>, q: string, pageSize: number, offset: number) {
  const { db, caller } = c.var;
  const found = await searchNotes(db, caller, Date.now(), q, pageSize, offset);
  if (!found) return notesUnauthorized(c);
  if (found.nextOffset !== undefined) {
    c.header(
      "Link",
      `</notes?q=${encodeURIComponent(q.toWellFormed())}&limit=${pageSize}&offset=${found.nextOffset}>; rel="next"`,
    );
  }
  return jsonText<NoteJson[], 200>(c, found.body, 200);
}

/**
 * The list, or with `limit` a page of it and the next page in `Link`; with its ETag. A poll that sends the
 * ETag back is answered from the version alone, without reading a note.
 */
export async function listAnswer(c: Context<NotesEnv>, limit: number | undefined, after: number | undefined) {
  const { db, log, caller } = c.var;
  const now = Date.now();
  const ifNoneMatch = readETags(c, "If-None-Match");
  if (ifNoneMatch) {
    const found = await asCaller(db, caller, now, readListVersion(db, caller, now, {}));
    if (!found) return notesUnauthorized(c);
    const etag = listETag(found[0]!.version, limit, after);
    if (etagListed(ifNoneMatch, etag)) return notModified(c, etag);
  }
  // The JSON comes from SQLite in chunks (see list.ts); a failure of the first query still reaches onError.
  const list = await listNotes(db, log, caller, now, limit === undefined ? undefined : { limit, after });
  if (!list) return notesUnauthorized(c);
  if (list.nextAfter !== undefined) c.header("Link", `</notes?limit=${limit}&after=${list.nextAfter}>; rel="next"`);
  c.header("ETag", listETag(list.version, limit, after));
  return jsonText<NoteJson[], 200>(c, list.body, 200);
}

/** A create with an Idempotency-Key: the note created now, or the replay of the key's first answer. */
export async function createdOnce(c: Context<NotesEnv>, key: string, title: string, content: string, now: number) {
  const { db, caller, watchers } = c.var;
  const once = await createOnce(db, caller, key, title, content, now, caller && watchers.watching(caller.userId));
  if (once.outcome === "unauthorized") return notesUnauthorized(c);
  if (once.outcome === "mismatch") return c.json({ error: NoteMessage.idempotencyKeyReused }, 422);
  if (once.outcome === "in_progress") return c.json({ error: NoteMessage.idempotencyKeyInProgress }, 409);
  // A replay wrote nothing: nobody is told of it.
  if (once.outcome === "replayed") c.header(IDEMPOTENT_REPLAYED_HEADER, "true");
  else if (once.watched && caller) watchers.changed(caller.userId);
  c.header("ETag", etagOf(once.revision));
  return jsonText<NoteJson, 201>(c, once.body, 201);
}

/**
 * Runs a write for the caller, in one round trip with the check that the caller's session is live and, for a
 * caller, whether anyone watches the account's notes (notes/area.ts); once it has written, they hear of it
 * (public notes have no watchers). The write's rows (none: nothing was written), or undefined when the
 * caller's session is not live.
 */
export async function written<Row>(c: Context<NotesEnv>, now: number, write: Bound<Row>): Promise<Row[] | undefined> {
  const { db, caller, watchers } = c.var;
  if (!caller) return asCaller(db, caller, now, write);
  const done = await asCaller(db, caller, now, [write, watchers.watching(caller.userId)] as const);
  if (!done) return undefined;
  const [rows, watched] = done;
  if (rows.length > 0 && watched.length > 0) watchers.changed(caller.userId);
  return rows;
}
