import type { Context, TypedResponse } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { databaseOf } from "../db/client";
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
 * The note `id` as the caller may read it (GET /notes/{id}). A grantee's read is confirmed at the primary, where a
 * share's end is written: a read replica that lags must not show a note whose share was just revoked
 * (docs/sharing.md). An owner's read stays wherever the request's session reads.
 */
export async function readForCaller(c: Context<NotesEnv>, id: number, now: number) {
  const { db, caller } = c.var;
  const found = await asCaller(db, caller, now, readNote(db, id, caller, now));
  if (!found?.[0] || found[0].role === "owner") return found;
  const primary = databaseOf(c.env.DB.withSession("first-primary"));
  return asCaller(primary, caller, now, readNote(primary, id, caller, now));
}

/** 403: a grantee sees the note but lacks the right to what it asked (`message` says which). */
export const forbidden = <M extends string>(c: Context, message: M) => c.json({ error: message }, 403);

/**
 * Why a PATCH (`change`) or DELETE wrote nothing: the note is not there for the caller (the spec's 404), the caller
 * is a grantee without the right (403: a viewer's change, any grantee's delete), or the note is at another
 * revision than If-Match names (412). Read after the write, only to choose the answer: the write itself decided.
 */
export async function whyNotWritten(
  c: Context<NotesEnv>,
  id: number,
  now: number,
  asked: { write: "change" | "delete"; conditional: boolean },
) {
  const { db, caller } = c.var;
  const found = await asCaller(db, caller, now, readNote(db, id, caller, now));
  if (!found) return notesUnauthorized(c);
  const note = found[0];
  if (!note) return notFound(c);
  if (asked.write === "change" && note.role === "viewer") return forbidden(c, NoteMessage.viewerCannotChange);
  if (asked.write === "delete" && note.role !== "owner") return forbidden(c, NoteMessage.onlyOwnerDeletes);
  // Written by nobody, yet there and the caller's to write: only If-Match can have refused it (or the note went
  // and came back between the two statements, which the 404 tells as well as anything).
  return asked.conditional ? preconditionFailed(c, note.revision) : notFound(c);
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
 * The list (the caller's own notes, or with `shared` those shared with it), or with `limit` a page of it and the
 * next page in `Link`; with its ETag. A poll that sends the
 * ETag back is answered from the version alone, without reading a note.
 */
export async function listAnswer(
  c: Context<NotesEnv>,
  limit: number | undefined,
  after: number | undefined,
  shared: boolean,
) {
  const { db, log, caller } = c.var;
  const now = Date.now();
  const ifNoneMatch = readETags(c, "If-None-Match");
  const tagOf = (version: number) => listETag(version, limit, after, shared);
  if (ifNoneMatch) {
    const found = await asCaller(db, caller, now, readListVersion(db, caller, now, {}));
    if (!found) return notesUnauthorized(c);
    const etag = tagOf(found[0]!.version);
    if (etagListed(ifNoneMatch, etag)) return notModified(c, etag);
  }
  // The JSON comes from SQLite in chunks (see list.ts); a failure of the first query still reaches onError.
  const list = await listNotes(db, log, caller, now, limit === undefined ? undefined : { limit, after }, shared);
  if (!list) return notesUnauthorized(c);
  const scope = shared ? "shared=true&" : "";
  if (list.nextAfter !== undefined)
    c.header("Link", `</notes?${scope}limit=${limit}&after=${list.nextAfter}>; rel="next"`);
  c.header("ETag", tagOf(list.version));
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
 * caller, which of the accounts it concerns anyone may be watching (notes/area.ts): `audience`, the caller's own
 * unless told (for a note that may be shared, its readers: `c.var.watchers.readers(id)`). It is read before the
 * write, in the same transaction, so a deletion still finds the accounts it takes the note from. Once it has
 * written, they hear of it (public notes have no watchers). The write's rows (none: nothing was written), or
 * undefined when the caller's session is not live.
 */
export async function written<Row>(
  c: Context<NotesEnv>,
  now: number,
  write: Bound<Row>,
  audience?: Bound<{ userId: number }>,
): Promise<Row[] | undefined> {
  const { db, caller, watchers } = c.var;
  if (!caller) return asCaller(db, caller, now, write);
  const watching = audience ?? watchers.watching(caller.userId);
  const done = await asCaller(db, caller, now, [watching, write] as const);
  if (!done) return undefined;
  const [watched, rows] = done;
  if (rows.length > 0) tell(c, watched);
  return rows;
}

/** Tells each watched account of a committed write (after the answer, notes/area.ts). */
export function tell(
  c: { var: Pick<NotesEnv["Variables"], "watchers"> },
  watched: readonly { userId: number }[],
): void {
  for (const { userId } of watched) c.var.watchers.changed(userId);
}
