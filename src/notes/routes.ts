import { Hono, type Context, type TypedResponse } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { asCaller } from "../auth/caller";
import { clientRateLimit, limitBody } from "../lib/guards";
import { methodNotAllowed } from "../lib/http";
import { jsonBody, queryParams } from "../lib/validation";
import type { AppEnv } from "../types";
import { createOnce, IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER, parseIdempotencyKey } from "./idempotency";
import { listNotes } from "./list";
import { DEFAULT_SEARCH_LIMIT, searchNotes } from "./search";
import { notesUnauthorized, requireNotesAuth } from "./owner";
import { deleteNote, insertNote, readNote, updateNote } from "./queries";
import { CreateNoteBody, ListQuery, NOTES_BODY_LIMIT_BYTES, NoteMessage, parseNoteId, UpdateNoteBody, type NoteJson } from "./schemas";

/** The spec's 404 for a note that does not exist. */
const noteNotFound = (c: Context) => c.json({ error: NoteMessage.notFound }, 404);

/** JSON that SQLite wrote, passed on as it is; typed as the JSON it holds, for the typed client. */
function jsonText<T, U extends ContentfulStatusCode>(c: Context, body: string | ReadableStream<Uint8Array>, status: U) {
  return c.body(body, status, { "Content-Type": "application/json" }) as unknown as Response & TypedResponse<T, U, "json">;
}

// Every handler makes one D1 round trip: its statement, batched with the check of the caller's session
// when notes are private (asCaller answers undefined when that session has ended: a 401).
export const notesApp = new Hono<AppEnv>()
  .use(limitBody(NOTES_BODY_LIMIT_BYTES, NoteMessage.bodyTooLarge))
  .use(clientRateLimit((env) => env.NOTES_RATE_LIMITER, ["POST", "PATCH", "DELETE"], NoteMessage.clientThrottled))
  .use(requireNotesAuth)
  .get("/", queryParams(ListQuery), async (c) => {
    const { limit, after, q, offset } = c.req.valid("query");
    const { db, log, caller } = c.var;
    if (q !== undefined) {
      const pageSize = limit ?? DEFAULT_SEARCH_LIMIT;
      const found = await searchNotes(db, caller, Date.now(), q, pageSize, offset ?? 0);
      if (!found) return notesUnauthorized(c);
      if (found.nextOffset !== undefined) {
        c.header("Link", `</notes?q=${encodeURIComponent(q.toWellFormed())}&limit=${pageSize}&offset=${found.nextOffset}>; rel="next"`);
      }
      return jsonText<NoteJson[], 200>(c, found.body, 200);
    }
    // The JSON comes from SQLite in chunks (see list.ts); a failure of the first chunk still reaches onError.
    const list = await listNotes(db, log, caller, Date.now(), limit === undefined ? undefined : { limit, after });
    if (!list) return notesUnauthorized(c);
    if (list.nextAfter !== undefined) c.header("Link", `</notes?limit=${limit}&after=${list.nextAfter}>; rel="next"`);
    return jsonText<NoteJson[], 200>(c, list.body, 200);
  })
  .post("/", jsonBody(CreateNoteBody), async (c) => {
    const { title, content } = c.req.valid("json");
    const { db, caller } = c.var;
    const now = Date.now();
    const key = parseIdempotencyKey(c.req.header(IDEMPOTENCY_KEY_HEADER));
    if (key !== undefined) {
      const once = await createOnce(db, caller, key, title, content, now);
      if (once.outcome === "unauthorized") return notesUnauthorized(c);
      if (once.outcome === "mismatch") return c.json({ error: NoteMessage.idempotencyKeyReused }, 422);
      if (once.outcome === "in_progress") return c.json({ error: NoteMessage.idempotencyKeyInProgress }, 409);
      if (once.outcome === "replayed") c.header(IDEMPOTENT_REPLAYED_HEADER, "true");
      return jsonText<NoteJson, 201>(c, once.body, 201);
    }
    const created = await asCaller(db, caller, now, insertNote(db, title, content, caller, now));
    if (!created) return notesUnauthorized(c);
    return jsonText<NoteJson, 201>(c, created[0]!.json, 201);
  })

  // Each `/:id` handler parses the id first: the spec puts the 400 for a bad id before the 405.
  .get("/:id", async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const { db, caller } = c.var;
    const now = Date.now();
    const found = await asCaller(db, caller, now, readNote(db, id, caller, now));
    if (!found) return notesUnauthorized(c);
    return found[0] ? jsonText<NoteJson, 200>(c, found[0].json, 200) : noteNotFound(c);
  })
  .patch("/:id", jsonBody(UpdateNoteBody), async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const { title, content } = c.req.valid("json");
    const { db, caller } = c.var;
    const now = Date.now();
    // An empty change is a read, not a write of the same values.
    const query =
      title === undefined && content === undefined
        ? readNote(db, id, caller, now)
        : updateNote(db, id, caller, now, title ?? null, content ?? null);
    const updated = await asCaller(db, caller, now, query);
    if (!updated) return notesUnauthorized(c);
    return updated[0] ? jsonText<NoteJson, 200>(c, updated[0].json, 200) : noteNotFound(c);
  })
  .delete("/:id", async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const { db, caller } = c.var;
    const now = Date.now();
    const deleted = await asCaller(db, caller, now, deleteNote(db, id, caller, now));
    if (!deleted) return notesUnauthorized(c);
    return deleted[0] ? c.body(null, 204) : noteNotFound(c);
  });

// Any other method is a 405 (after the id check, as the spec orders them). Registered outside the chain
// above, so that the exported app type (and with it the typed client) lists only the methods that exist.
notesApp.all("/", methodNotAllowed("GET, POST"));
notesApp.all("/:id", (c) => {
  parseNoteId(c.req.param("id"));
  return methodNotAllowed("GET, PATCH, DELETE")(c);
});
