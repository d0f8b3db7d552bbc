import { badJson, bearerOnly, jsonError, schemaOf, throttled, type Json } from "../../lib/describe";
import { NoteMessage } from "../messages";
import { notesErrors } from "../docs";
import { SharingMessage } from "./messages";
import { Link, NewLink, Share, SharedNote } from "./shapes";

/** The OpenAPI fragments the sharing routes share, written once for their descriptions. */

/** Every route of sharing that acts for an account: with NOTES_AUTH=required only. */
export const sharingOperation = { tags: ["notes"], security: bearerOnly };

export const linkSchema = schemaOf(Link);
export const newLinkSchema = schemaOf(NewLink);
export const shareSchema = schemaOf(Share);
export const sharedNoteSchema = schemaOf(SharedNote);

export const linkIdParameter = {
  name: "linkId",
  in: "path",
  required: true,
  description: "The link's `id` (not its token)",
  schema: { type: "string" },
};

export const shareIdParameter = {
  name: "shareId",
  in: "path",
  required: true,
  description: "The share's `id`",
  schema: { type: "string" },
};

/** The 404 of every route: public notes, or a note the caller cannot see (never a 403: nothing tells it exists). */
export function sharingNotFound(...more: string[]): Json {
  return jsonError(
    "Notes are public (NOTES_AUTH=off), where there is no sharing; or no such note, or one the caller may not see",
    SharingMessage.needsAccounts,
    NoteMessage.notFound,
    ...more,
  );
}

/** The 403 of a grantee: it sees the note, but only its owner may do this. */
export const ownerOnlyAnswer = (message: string) =>
  jsonError("The note is shared with the caller, who is not its owner", message);

export const sharingErrors = { "401": notesErrors["401"], "500": notesErrors["500"] };

export const bodyErrors = (...messages: string[]) =>
  jsonError("Bad note id or malformed input", NoteMessage.invalidId, ...messages, ...badJson);

export const writeThrottled = {
  "413": jsonError("Body over the limit of sharing's requests", SharingMessage.bodyTooLarge),
  "429": throttled(jsonError("Per-client rate limit", NoteMessage.clientThrottled)),
};
