import { and, eq, sql } from "drizzle-orm";
import { Hono, type Context } from "hono";
import { asCaller, callerSession, liveSession } from "../auth/session-store";
import { notes, sessions } from "../db/schema";
import { methodNotAllowed } from "../lib/http";
import type { AccessClaims } from "../lib/tokens";
import { jsonBody, queryParams } from "../lib/validation";
import type { AppEnv } from "../types";
import { listPage, ownedBy, streamNotes } from "./list";
import { notesUnauthorized, requireNotesAuth } from "./owner";
import { CreateNoteBody, ListQuery, NoteMessage, noteJson, parseNoteId, UpdateNoteBody } from "./schemas";

/** The spec's 404 for a note that does not exist. */
const noteNotFound = (c: Context) => c.json({ error: NoteMessage.notFound }, 404);

/**
 * The note with this id, of the caller when notes are private: someone else's note is not found, and
 * nothing is found or changed once the caller's session has ended.
 */
const thisNote = (id: number, caller: AccessClaims | undefined, now: number) =>
  and(eq(notes.id, id), ownedBy(caller), caller && liveSession(caller, now));

export const notesApp = new Hono<AppEnv>()
  .use(requireNotesAuth)
  .get("/", queryParams(ListQuery), async (c) => {
    const { limit, after } = c.req.valid("query");
    const { db, log, caller } = c.var;
    const now = Date.now();
    if (limit === undefined) {
      // The whole list, streamed in keyset-paged chunks (see list.ts); a failure of the first chunk
      // still reaches onError.
      const body = await streamNotes(db, log, caller, now);
      return body === undefined ? notesUnauthorized(c) : c.body(body, 200, { "Content-Type": "application/json" });
    }
    const page = await listPage(db, caller, now, limit, after);
    if (!page) return notesUnauthorized(c);
    const last = page.notes.at(-1);
    if (page.hasMore && last) c.header("Link", `</notes?limit=${limit}&after=${last.id}>; rel="next"`);
    return c.json(page.notes.map(noteJson), 200);
  })
  .post("/", jsonBody(CreateNoteBody), async (c) => {
    const { title, content } = c.req.valid("json");
    const { db, caller } = c.var;
    const now = Date.now();
    // A private note is written only while its author's session is live, in the same statement.
    const insert = caller
      ? db
          .insert(notes)
          .select(
            db
              // Every column, in the table's order (drizzle's rule for INSERT … SELECT); a NULL id is assigned.
              .select({
                id: sql<number>`NULL`.as("id"),
                title: sql<string>`${title}`.as("title"),
                content: sql<string>`${content}`.as("content"),
                createdAt: sql<number>`${now}`.as("created_at"),
                userId: sessions.userId,
              })
              .from(sessions)
              .where(callerSession(caller, now)),
          )
          .returning()
      : db.insert(notes).values({ title, content, createdAt: new Date(now), userId: null }).returning();
    const created = await asCaller(db, caller, now, insert);
    if (!created) return notesUnauthorized(c);
    return c.json(noteJson(created[0]!), 201);
  })

  // Each `/:id` handler parses the id first: the spec puts the 400 for a bad id before the 405.
  .get("/:id", async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const { db, caller } = c.var;
    const now = Date.now();
    const found = await asCaller(db, caller, now, db.select().from(notes).where(thisNote(id, caller, now)));
    if (!found) return notesUnauthorized(c);
    return found[0] ? c.json(noteJson(found[0]), 200) : noteNotFound(c);
  })
  .patch("/:id", jsonBody(UpdateNoteBody), async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const { title, content } = c.req.valid("json");
    const changes = { ...(title !== undefined && { title }), ...(content !== undefined && { content }) };
    const { db, caller } = c.var;
    const now = Date.now();
    // Drizzle refuses an UPDATE with nothing to set; an empty change is a read.
    const query =
      Object.keys(changes).length === 0
        ? db.select().from(notes).where(thisNote(id, caller, now))
        : db.update(notes).set(changes).where(thisNote(id, caller, now)).returning();
    const updated = await asCaller(db, caller, now, query);
    if (!updated) return notesUnauthorized(c);
    return updated[0] ? c.json(noteJson(updated[0]), 200) : noteNotFound(c);
  })
  .delete("/:id", async (c) => {
    const id = parseNoteId(c.req.param("id"));
    const { db, caller } = c.var;
    const now = Date.now();
    const deleted = await asCaller(db, caller, now, db.delete(notes).where(thisNote(id, caller, now)).returning({ id: notes.id }));
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
