import { Hono } from "hono";
import { asCaller } from "./runner";
import { badJson, describeRoute, json, jsonError, ref, throttled } from "../lib/describe";
import { clientRateLimit, limitBody } from "../lib/request-limits";
import { noStore } from "../lib/security-headers";
import { allowedMethods, methodNotAllowed } from "../lib/http";
import { HOUR } from "../lib/units";
import { jsonBody, queryParams } from "../lib/validation";
import type { AppEnv } from "../types";
import {
  etagHeader,
  idParameter,
  ifMatchParameter,
  ifNoneMatchParameter,
  listAnswers,
  notesErrors,
  notesOperation,
  noteNotFound,
  notModifiedAnswer,
  noteWithETag,
  noteWriteErrors,
  preconditionErrors,
} from "./docs";
import {
  createdOnce,
  forbidden,
  listAnswer,
  noteAnswer,
  notFound,
  notModified,
  preconditionFailed,
  readForCaller,
  searchAnswer,
  written,
  whyNotWritten,
} from "./answers";
import { etagListed, etagOf, matches, readETags, writePrecondition } from "./conditional";
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_TTL_MS,
  IDEMPOTENT_REPLAYED_HEADER,
  parseIdempotencyKey,
} from "./idempotency";
import { MAX_IDEMPOTENCY_KEY_CHARS, NOTES_BODY_LIMIT_BYTES, NoteMessage } from "./messages";
import { notesUnauthorized, requireNotesAuth } from "./require-auth";
import { deleteNote, insertNote, readNote, updateNote } from "./queries";
import { CreateNoteBody, ListQuery, MAX_PAGE_SIZE, parseNoteId, UpdateNoteBody } from "./requests";
import { DEFAULT_SEARCH_LIMIT } from "./search";
import { limitSearches, noteIdFirst } from "./middleware";

// Every handler makes one D1 round trip: its statement, batched with the check of the caller's session when
// notes are private (asCaller answers undefined when that session has ended: a 401), and for a write the check
// whether anyone watches the account's notes (written, answers.ts).
export const notesApp = new Hono<AppEnv>()
  .use(limitBody(NOTES_BODY_LIMIT_BYTES, NoteMessage.bodyTooLarge))
  .use(
    clientRateLimit(
      (env) => ({ client: env.NOTES_RATE_LIMITER, network: env.NOTES_RATE_LIMITER_IPV6_48 }),
      ["POST", "PATCH", "DELETE"],
      NoteMessage.clientThrottled,
    ),
  )
  // Private notes are personal data: not cached (public notes, as the contract has them, may be).
  .use(noStore((c) => c.get("config").notesAuth === "required"))
  .use(requireNotesAuth)
  .get(
    "/",
    describeRoute({
      ...notesOperation,
      summary: "List or search notes, yours or those shared with you",
      parameters: [ifNoneMatchParameter],
      description:
        `All notes by id ascending; with \`limit\` (1 to ${MAX_PAGE_SIZE}) one page, and a \`Link: <…>; rel="next"\` header when more exist. ` +
        "With NOTES_AUTH=required your own notes, or with `shared=true` the notes other accounts shared with you, paged the same way. " +
        "With `q`, a search: the notes whose title or content contain every word, those that match in their title first, then the newest first, " +
        `${DEFAULT_SEARCH_LIMIT} per page unless \`limit\` says otherwise (fewer when the notes are large), the next page in \`Link\` (with \`offset\`).`,
      responses: {
        ...listAnswers,
        "400": jsonError(
          "Bad paging or search parameters",
          `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`,
          "after must be an integer",
          NoteMessage.searchEmpty,
          NoteMessage.searchTooLong,
          NoteMessage.searchTooManyWords,
          "offset must be an integer of at least 0",
          "shared must be true or false",
          NoteMessage.sharedWithSearch,
          NoteMessage.sharedNeedsAccounts,
          NoteMessage.invalidIfNoneMatch,
        ),
        "429": throttled(jsonError("Per-client limit of searches (only with `q`)", NoteMessage.searchThrottled)),
        ...notesErrors,
      },
    }),
    limitSearches,
    queryParams(ListQuery),
    async (c) => {
      const { limit, after, q, offset, shared } = c.req.valid("query");
      if (shared && !c.var.caller) return c.json({ error: NoteMessage.sharedNeedsAccounts }, 400);
      return q === undefined
        ? listAnswer(c, limit, after, shared ?? false)
        : searchAnswer(c, q, limit ?? DEFAULT_SEARCH_LIMIT, offset ?? 0);
    },
  )
  .post(
    "/",
    describeRoute({
      ...notesOperation,
      summary: "Create a note",
      description:
        `With \`${IDEMPOTENCY_KEY_HEADER}\` the request can be retried safely for ${IDEMPOTENCY_KEY_TTL_MS / HOUR} hours: the first creates the note, ` +
        "a repeat with the same key and the same title and content creates nothing and gets the first answer again, byte for byte, with " +
        `\`${IDEMPOTENT_REPLAYED_HEADER}: true\`. Keys belong to the caller (to the user with NOTES_AUTH=required). ` +
        "A repeat sent while the first is being processed waits for it and gets the replay.",
      parameters: [
        {
          name: IDEMPOTENCY_KEY_HEADER,
          in: "header",
          required: false,
          description: `1 to ${MAX_IDEMPOTENCY_KEY_CHARS} visible ASCII characters, e.g. a UUID, new for each note the client means to create; taken as it is (quotes included)`,
          schema: { type: "string", minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_CHARS, pattern: "^[\\x21-\\x7e]+$" },
        },
      ],
      requestExample: { title: "First", content: "Hello" },
      responses: {
        "201": json(
          "Created, or (with `Idempotent-Replayed: true`) the stored answer to the key's first request",
          ref("Note"),
          {
            [IDEMPOTENT_REPLAYED_HEADER]: {
              description: "`true` on a replay",
              schema: { type: "string", enum: ["true"] },
            },
            ...etagHeader,
          },
        ),
        "409": jsonError(
          `The \`${IDEMPOTENCY_KEY_HEADER}\`'s first request has not finished`,
          NoteMessage.idempotencyKeyInProgress,
        ),
        "422": jsonError(
          `The \`${IDEMPOTENCY_KEY_HEADER}\` was used with another title or content`,
          NoteMessage.idempotencyKeyReused,
        ),
        "400": jsonError(
          "Malformed input",
          NoteMessage.invalidIdempotencyKey,
          NoteMessage.titleRequired,
          NoteMessage.contentRequired,
          NoteMessage.titleEmpty,
          NoteMessage.titleTooLong,
          ...badJson,
        ),
        ...noteWriteErrors,
        ...notesErrors,
      },
    }),
    jsonBody(CreateNoteBody),
    async (c) => {
      const { title, content } = c.req.valid("json");
      const { db, caller } = c.var;
      const now = Date.now();
      const key = parseIdempotencyKey(c.req.header(IDEMPOTENCY_KEY_HEADER));
      if (key !== undefined) return createdOnce(c, key, title, content, now);
      const created = await written(c, now, insertNote(db, title, content, caller, now));
      if (!created) return notesUnauthorized(c);
      return noteAnswer(c, created[0]!, 201);
    },
  )

  // Each `/:id` handler parses the id first: the spec puts the 400 for a bad id before the 405.
  .get(
    "/:id",
    describeRoute({
      ...notesOperation,
      summary: "Read a note",
      description: "Your own note, or with NOTES_AUTH=required one shared with you (as a viewer or an editor).",
      parameters: [idParameter, ifNoneMatchParameter],
      responses: {
        "200": noteWithETag("The note"),
        "304": notModifiedAnswer,
        "400": jsonError(
          "`{id}` is not an integer, or a malformed If-None-Match",
          NoteMessage.invalidId,
          NoteMessage.invalidIfNoneMatch,
        ),
        "404": noteNotFound,
        ...notesErrors,
      },
    }),
    async (c) => {
      const id = parseNoteId(c.req.param("id"));
      const now = Date.now();
      const ifNoneMatch = readETags(c, "If-None-Match");
      const found = await readForCaller(c, id, now);
      if (!found) return notesUnauthorized(c);
      const note = found[0];
      if (!note) return notFound(c);
      if (ifNoneMatch && etagListed(ifNoneMatch, etagOf(note.revision))) return notModified(c, etagOf(note.revision));
      return noteAnswer(c, note, 200);
    },
  )
  .patch(
    "/:id",
    describeRoute({
      ...notesOperation,
      summary: "Update a note partially",
      description: "Changes only the fields present; `{}` changes nothing and returns the note.",
      parameters: [idParameter, ifMatchParameter],
      requestExample: { content: "Hello again" },
      responses: {
        "200": noteWithETag("The note after the update"),
        "400": jsonError(
          "Bad id or malformed input",
          NoteMessage.invalidId,
          NoteMessage.titleNotString,
          NoteMessage.contentNotString,
          NoteMessage.titleEmpty,
          NoteMessage.titleTooLong,
          NoteMessage.invalidIfMatch,
          ...badJson,
        ),
        "403": jsonError("The note is shared with the caller as a viewer", NoteMessage.viewerCannotChange),
        "404": noteNotFound,
        ...preconditionErrors,
        ...noteWriteErrors,
        ...notesErrors,
      },
    }),
    // The contract checks the id first: a bad id is its 400 whatever the body holds.
    noteIdFirst,
    jsonBody(UpdateNoteBody),
    async (c) => {
      const id = parseNoteId(c.req.param("id"));
      const { title, content } = c.req.valid("json");
      const { db, caller, config } = c.var;
      const ifMatch = writePrecondition(c, config.notesRequireIfMatch);
      const now = Date.now();
      // An empty change is a read, not a write of the same values: its If-Match is checked on what it read.
      if (title === undefined && content === undefined) {
        const found = await asCaller(db, caller, now, readNote(db, id, caller, now));
        if (!found) return notesUnauthorized(c);
        const note = found[0];
        if (!note) return notFound(c);
        if (note.role === "viewer") return forbidden(c, NoteMessage.viewerCannotChange);
        return ifMatch && !matches(ifMatch, note.revision)
          ? preconditionFailed(c, note.revision)
          : noteAnswer(c, note, 200);
      }
      // The note may be shared: everyone who reads it hears of the change.
      const update = updateNote(db, id, caller, now, title ?? null, content ?? null, ifMatch);
      const updated = await written(c, now, update, caller && c.var.watchers.readers(id));
      if (!updated) return notesUnauthorized(c);
      if (updated[0]) return noteAnswer(c, updated[0], 200);
      // Public notes have no grantees: only If-Match can refuse a note that is there.
      return ifMatch || caller
        ? whyNotWritten(c, id, now, { write: "change", conditional: ifMatch !== undefined })
        : notFound(c);
    },
  )
  .delete(
    "/:id",
    describeRoute({
      ...notesOperation,
      summary: "Delete a note",
      parameters: [idParameter, ifMatchParameter],
      responses: {
        "204": { description: "Deleted" },
        "400": jsonError(
          "`{id}` is not an integer, or a malformed If-Match",
          NoteMessage.invalidId,
          NoteMessage.invalidIfMatch,
        ),
        "403": jsonError("The note is shared with the caller: only its owner deletes it", NoteMessage.onlyOwnerDeletes),
        "404": noteNotFound,
        ...preconditionErrors,
        "429": noteWriteErrors["429"],
        ...notesErrors,
      },
    }),
    async (c) => {
      const id = parseNoteId(c.req.param("id"));
      const { db, caller, config } = c.var;
      const ifMatch = writePrecondition(c, config.notesRequireIfMatch);
      const now = Date.now();
      // Its readers are read before it goes, in the same transaction: the grantees hear of it too.
      const deleted = await written(
        c,
        now,
        deleteNote(db, id, caller, now, ifMatch),
        caller && c.var.watchers.readers(id),
      );
      if (!deleted) return notesUnauthorized(c);
      if (deleted[0]) return c.body(null, 204);
      return ifMatch || caller
        ? whyNotWritten(c, id, now, { write: "delete", conditional: ifMatch !== undefined })
        : notFound(c);
    },
  );

// Any other method is a 405 (after the id check, as the spec orders them). Registered outside the chain
// above, so that the exported app type (and with it the typed client) lists only the methods that exist.
for (const [path, allow] of allowedMethods(notesApp.routes)) notesApp.all(path, noteIdFirst, methodNotAllowed(allow));
