import { and, eq } from "drizzle-orm";
import { Hono, type Context } from "hono";
import { notes } from "../db/schema";
import { methodNotAllowed } from "../lib/http";
import { jsonBody, queryParams } from "../lib/validation";
import type { AppEnv } from "../types";
import { listNotes, ownedBy } from "./list";
import { requireNotesAuth } from "./owner";
import { CreateNoteBody, ListQuery, NoteMessage, noteJson, parseNoteId, UpdateNoteBody } from "./schemas";

/** The spec's 404 for a note that does not exist. */
const noteNotFound = (c: Context) => c.json({ error: NoteMessage.notFound }, 404);

/** The note with this id, of the caller when notes are private: someone else's note is not found. */
const thisNote = (id: number, owner: number | undefined) => and(eq(notes.id, id), ownedBy(owner));

export const notesApp = new Hono<AppEnv>()
  .use(requireNotesAuth)
  .get("/", queryParams(ListQuery), async (c) => {
    const { limit, after } = c.req.valid("query");
    const { db, log, owner } = c.var;
    // The JSON comes from SQLite in chunks (see list.ts); a failure of the first chunk still reaches onError.
    const list = await listNotes(db, log, owner, limit === undefined ? undefined : { limit, after });
    if (list.nextAfter !== undefined) c.header("Link", `</notes?limit=${limit}&after=${list.nextAfter}>; rel="next"`);
    return c.body(list.body, 200, { "Content-Type": "application/json" });
  })
  .post("/", jsonBody(CreateNoteBody), async (c) => {
    const { title, content } = c.req.valid("json");
    const [note] = await c.var.db
      .insert(notes)
      .values({ title, content, createdAt: new Date(), userId: c.var.owner ?? null })
      .returning();
    return c.json(noteJson(note!), 201);
  })

  // Each `/:id` handler parses the id first: the spec puts the 400 for a bad id before the 405.
  .get("/:id", async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const note = await c.var.db.select().from(notes).where(thisNote(id, c.var.owner)).get();
    return note ? c.json(noteJson(note), 200) : noteNotFound(c);
  })
  .patch("/:id", jsonBody(UpdateNoteBody), async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const { title, content } = c.req.valid("json");
    const changes = { ...(title !== undefined && { title }), ...(content !== undefined && { content }) };
    const { db, owner } = c.var;
    // Drizzle refuses an UPDATE with nothing to set; an empty change is a read.
    const [note] =
      Object.keys(changes).length === 0
        ? await db.select().from(notes).where(thisNote(id, owner))
        : await db.update(notes).set(changes).where(thisNote(id, owner)).returning();
    return note ? c.json(noteJson(note), 200) : noteNotFound(c);
  })
  .delete("/:id", async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const [deleted] = await c.var.db.delete(notes).where(thisNote(id, c.var.owner)).returning({ id: notes.id });
    return deleted ? c.body(null, 204) : noteNotFound(c);
  });

// Any other method is a 405 (after the id check, as the spec orders them). Registered outside the chain
// above, so that the exported app type (and with it the typed client) lists only the methods that exist.
notesApp.all("/", methodNotAllowed("GET, POST"));
notesApp.all("/:id", (c) => {
  parseNoteId(c.req.param("id"));
  return methodNotAllowed("GET, PATCH, DELETE")(c);
});
