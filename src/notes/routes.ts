import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { notes, type Note } from "../db/schema";
import { methodNotAllowed, readJsonObject } from "../lib/http";
import type { AppEnv } from "../types";
import { NoteMessage, parseNoteId, readNoteChanges, readNewNote } from "./input";
import { streamNotes } from "./list";

/** The JSON shape of a note, as the spec names its fields. */
function toJson(note: Note) {
  return { id: note.id, title: note.title, content: note.content, created_at: note.createdAt.toISOString() };
}

export const notesApp = new Hono<AppEnv>()
  .get("/", async (c) => {
    // Streamed in keyset-paged chunks (see list.ts); a failure of the first chunk still reaches onError.
    const body = await streamNotes(c.var.db, c.var.log, toJson);
    return c.body(body, 200, { "Content-Type": "application/json" });
  })
  .post("/", async (c) => {
    const fields = readNewNote(await readJsonObject(c));
    const [note] = await c.var.db
      .insert(notes)
      .values({ ...fields, createdAt: new Date() })
      .returning();
    return c.json(toJson(note!), 201);
  })
  .all("/", methodNotAllowed("GET, POST"))

  // Each `/:id` handler parses the id first: the spec puts the 400 for a bad id before the 405.
  .get("/:id", async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const note = await c.var.db.select().from(notes).where(eq(notes.id, id)).get();
    return note ? c.json(toJson(note), 200) : c.json({ error: NoteMessage.notFound }, 404);
  })
  .patch("/:id", async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const changes = readNoteChanges(await readJsonObject(c));
    const { db } = c.var;
    // Drizzle refuses an UPDATE with nothing to set; an empty change is a read.
    const [note] =
      Object.keys(changes).length === 0
        ? await db.select().from(notes).where(eq(notes.id, id))
        : await db.update(notes).set(changes).where(eq(notes.id, id)).returning();
    return note ? c.json(toJson(note), 200) : c.json({ error: NoteMessage.notFound }, 404);
  })
  .delete("/:id", async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const [deleted] = await c.var.db.delete(notes).where(eq(notes.id, id)).returning({ id: notes.id });
    return deleted ? c.body(null, 204) : c.json({ error: NoteMessage.notFound }, 404);
  })
  .all("/:id", (c) => {
    parseNoteId(c.req.param("id"));
    return methodNotAllowed("GET, PATCH, DELETE")(c);
  });
