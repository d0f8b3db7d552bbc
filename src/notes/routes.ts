import { Hono, type Context, type TypedResponse } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { methodNotAllowed } from "../lib/http";
import { jsonBody, queryParams } from "../lib/validation";
import type { AppEnv } from "../types";
import { listNotes } from "./list";
import { requireNotesAuth } from "./owner";
import { noteQueries } from "./queries";
import { CreateNoteBody, ListQuery, NoteMessage, parseNoteId, UpdateNoteBody, type NoteJson } from "./schemas";

/** The spec's 404 for a note that does not exist. */
const noteNotFound = (c: Context) => c.json({ error: NoteMessage.notFound }, 404);

/** JSON that SQLite wrote, passed on as it is; typed as the JSON it holds, for the typed client. */
function jsonText<T, U extends ContentfulStatusCode>(c: Context, body: string | ReadableStream<Uint8Array>, status: U) {
  return c.body(body, status, { "Content-Type": "application/json" }) as unknown as Response & TypedResponse<T, U, "json">;
}

export const notesApp = new Hono<AppEnv>()
  .use(requireNotesAuth)
  .get("/", queryParams(ListQuery), async (c) => {
    const { limit, after } = c.req.valid("query");
    const { db, log, owner } = c.var;
    // The JSON comes from SQLite in chunks (see list.ts); a failure of the first chunk still reaches onError.
    const list = await listNotes(db, log, owner, limit === undefined ? undefined : { limit, after });
    if (list.nextAfter !== undefined) c.header("Link", `</notes?limit=${limit}&after=${list.nextAfter}>; rel="next"`);
    return jsonText<NoteJson[], 200>(c, list.body, 200);
  })
  .post("/", jsonBody(CreateNoteBody), async (c) => {
    const { title, content } = c.req.valid("json");
    const { db, owner } = c.var;
    const [note] = await noteQueries(db, owner !== undefined).insert.all({ title, content, createdAt: new Date(), userId: owner ?? null });
    return jsonText<NoteJson, 201>(c, note!.json, 201);
  })

  // Each `/:id` handler parses the id first: the spec puts the 400 for a bad id before the 405.
  .get("/:id", async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const { db, owner } = c.var;
    const note = await noteQueries(db, owner !== undefined).read.get({ id, owner });
    return note ? jsonText<NoteJson, 200>(c, note.json, 200) : noteNotFound(c);
  })
  .patch("/:id", jsonBody(UpdateNoteBody), async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const { title, content } = c.req.valid("json");
    const { db, owner } = c.var;
    const queries = noteQueries(db, owner !== undefined);
    // An empty change is a read, not a write of the same values.
    const [note] =
      title === undefined && content === undefined
        ? await queries.read.all({ id, owner })
        : await queries.update.all({ id, owner, title: title ?? null, content: content ?? null });
    return note ? jsonText<NoteJson, 200>(c, note.json, 200) : noteNotFound(c);
  })
  .delete("/:id", async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const { db, owner } = c.var;
    const [deleted] = await noteQueries(db, owner !== undefined).delete.all({ id, owner });
    return deleted ? c.body(null, 204) : noteNotFound(c);
  });

// Any other method is a 405 (after the id check, as the spec orders them). Registered outside the chain
// above, so that the exported app type (and with it the typed client) lists only the methods that exist.
notesApp.all("/", methodNotAllowed("GET, POST"));
notesApp.all("/:id", (c) => {
  parseNoteId(c.req.param("id"));
  return methodNotAllowed("GET, PATCH, DELETE")(c);
});
