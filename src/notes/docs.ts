import { json, jsonError, ref, throttled, type Json } from "../lib/describe";
import { NoteMessage } from "./messages";
import { NOTES_BODY_LIMIT_BYTES } from "./messages";

/** The OpenAPI answers the notes endpoints share, written once for the routes' descriptions. */

/** Every notes endpoint: public, or (NOTES_AUTH=required) with a Bearer token. */
export const notesOperation = { tags: ["notes"], security: [{}, { bearer: [] }] };

export const notesErrors = {
  "401": jsonError(
    "Missing, invalid or expired access token, or its session has ended (only with NOTES_AUTH=required)",
    NoteMessage.unauthorized,
  ),
  "500": jsonError("Unexpected failure", NoteMessage.internalError),
};

export const noteWriteErrors = {
  "413": jsonError(`Body over ${NOTES_BODY_LIMIT_BYTES / 1024 / 1024} MiB`, NoteMessage.bodyTooLarge),
  "429": throttled(jsonError("Per-client rate limit", NoteMessage.clientThrottled)),
};

export const idParameter = {
  name: "id",
  in: "path",
  required: true,
  description: "The note id, a decimal integer",
  schema: { type: "integer" },
};
export const noteNotFound = jsonError(
  "No such note (or, with NOTES_AUTH=required, someone else's)",
  NoteMessage.notFound,
);

/** The ETag an answer carries (conditional.ts). */
export const etagHeader = {
  ETag: {
    description: "The note's revision, strong; send it back in If-Match or If-None-Match",
    schema: { type: "string" },
  },
};

/** A 200 or 201 with a note and its ETag. */
export function noteWithETag(description: string): Json {
  return json(description, ref("Note"), etagHeader);
}

export const ifNoneMatchParameter = {
  name: "If-None-Match",
  in: "header",
  required: false,
  description: "ETags the client holds (or `*`): a match is a 304 with no body",
  schema: { type: "string" },
};

export const ifMatchParameter = {
  name: "If-Match",
  in: "header",
  required: false,
  description:
    'The note\'s ETag as last seen (or `*`): the write happens only if the note is still at that revision, else 412. A weak `W/"…"` is taken as the strong tag it was made from. Required with NOTES_REQUIRE_IF_MATCH=true',
  schema: { type: "string" },
};

export const notModifiedAnswer = { description: "Not modified: the ETag matched; no body", headers: etagHeader };

/** The answers of a conditional write (PATCH, DELETE). */
export const preconditionErrors = {
  "412": {
    ...jsonError(
      "The note is at another revision than If-Match names; nothing changed",
      NoteMessage.preconditionFailed,
    ),
    headers: etagHeader,
  },
  "428": jsonError("If-Match is missing and NOTES_REQUIRE_IF_MATCH=true", NoteMessage.ifMatchRequired),
};

/** A list's (or page's) answers: the notes with the next page and the list's version, and the 304 of a poll. */
export const listAnswers = {
  "200": json(
    "The notes",
    { type: "array", items: ref("Note") },
    {
      Link: { description: "The next page, when paging", schema: { type: "string" } },
      ETag: {
        description: "The list's (or page's) version; not on a search. Send it back in If-None-Match to poll",
        schema: { type: "string" },
      },
    },
  ),
  "304": {
    description: "Not modified: no note the list covers has changed since its ETag; no body",
    headers: { ETag: { schema: { type: "string" } } },
  },
};
