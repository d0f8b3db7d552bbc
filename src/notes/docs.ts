import { jsonError, throttled } from "../docs/describe";
import { NOTES_BODY_LIMIT_BYTES, NoteMessage } from "./schemas";

/** The OpenAPI answers the notes endpoints share, written once for the routes' descriptions. */

/** Every notes endpoint: public, or (NOTES_AUTH=required) with a Bearer token. */
export const notesOperation = { tags: ["notes"], security: [{}, { bearer: [] }] };

export const notesErrors = {
  "401": jsonError("Missing, invalid or expired access token, or its session has ended (only with NOTES_AUTH=required)", NoteMessage.unauthorized),
  "500": jsonError("Unexpected failure", NoteMessage.internalError),
};

export const noteWriteErrors = {
  "413": jsonError(`Body over ${NOTES_BODY_LIMIT_BYTES / 1024 / 1024} MiB`, NoteMessage.bodyTooLarge),
  "429": throttled(jsonError("Per-client rate limit", NoteMessage.clientThrottled)),
};

export const idParameter = { name: "id", in: "path", required: true, description: "The note id, a decimal integer", schema: { type: "integer" } };
export const badNoteId = jsonError("`{id}` is not an integer", NoteMessage.invalidId);
export const noteNotFound = jsonError("No such note (or, with NOTES_AUTH=required, someone else's)", NoteMessage.notFound);
