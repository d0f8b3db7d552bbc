import { bearerOnly, json, jsonError, schemaOf, throttled, type Json } from "../../lib/describe";
import { NoteMessage } from "../messages";
import { notesErrors } from "../docs";
import { AttachmentMessage } from "./messages";
import { MAX_ATTACHMENTS_PER_NOTE } from "./policy";
import { Attachment, AttachmentList } from "./shapes";
import { ATTACHMENT_CSP } from "./serve";
import { SHOWN_INLINE } from "./sniff";

/** The OpenAPI fragments the attachment routes share, written once for their descriptions. */

/** Every Bearer route of attachments: with NOTES_AUTH=required only. */
export const attachmentsOperation = { tags: ["notes"], security: bearerOnly };

export const attachmentSchema = schemaOf(Attachment);
export const attachmentListSchema = schemaOf(AttachmentList);

export const attachmentIdParameter = {
  name: "attachmentId",
  in: "path",
  required: true,
  description: "The attachment's `id`",
  schema: { type: "string" },
};

/** The 404 of every route: public notes, or a note or attachment the caller cannot see. */
export const attachmentNotFound = jsonError(
  "Notes are public (NOTES_AUTH=off), where there are no attachments; or no such note or attachment, " +
    "or someone else's (never a 403: nothing tells whether it exists)",
  AttachmentMessage.needsAccounts,
  NoteMessage.notFound,
  AttachmentMessage.notFound,
);

export const attachmentErrors = { "401": notesErrors["401"], "404": attachmentNotFound, "500": notesErrors["500"] };

const header = (description: string) => ({ description, schema: { type: "string" } });

/** The headers of the bytes' answers (serve.ts). */
const fileHeaders: Json = {
  ETag: header('`"<sha256>"`: send it back in If-None-Match (304)'),
  "Content-Disposition": header(
    `\`inline\` for ${[...SHOWN_INLINE].join(", ")}; \`attachment\` for everything else; both with \`filename*=UTF-8''…\``,
  ),
  "Content-Security-Policy": header(`\`${ATTACHMENT_CSP}\``),
  "X-Content-Type-Options": header("`nosniff`"),
  "Cache-Control": header("`private`"),
  "Accept-Ranges": header("`bytes`"),
};

/** A binary body of any of the stored types. */
const bytes = { "application/octet-stream": { schema: { type: "string", format: "binary" } } };

/** The answers of a download, through the Bearer route or a signed link. */
export const downloadAnswers: Record<string, Json> = {
  "200": { description: "The exact bytes, as `Content-Type` the stored type", headers: fileHeaders, content: bytes },
  "206": {
    description: "One range of the bytes (`Range: bytes=a-b`, `a-` or `-n`; several ranges get the whole file)",
    headers: { ...fileHeaders, "Content-Range": header("`bytes a-b/size`") },
    content: bytes,
  },
  "304": { description: "Not modified: If-None-Match named the ETag; no body", headers: fileHeaders },
  "400": jsonError("A malformed If-None-Match", NoteMessage.invalidIfNoneMatch),
  "416": {
    ...jsonError("The range is outside the file", AttachmentMessage.rangeNotSatisfiable),
    headers: { "Content-Range": header("`bytes */size`") },
  },
};

export const rangeParameters = [
  {
    name: "Range",
    in: "header",
    required: false,
    description: "One byte range: `bytes=a-b`, `bytes=a-` or `bytes=-n`",
    schema: { type: "string" },
  },
  {
    name: "If-None-Match",
    in: "header",
    required: false,
    description: "The ETag held: a match is a 304",
    schema: { type: "string" },
  },
];

/** The upload's request body: the bytes, with their length. */
export const uploadBody: Json = {
  required: true,
  description:
    "The file's bytes, as they are (no multipart, no encoding), with `Content-Length`; any `Content-Type`, which is ignored: the service sniffs the bytes.",
  content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
};

export const uploadErrors = {
  "400": jsonError(
    "Bad note id, filename or Content-Length, or a body shorter or longer than its Content-Length (nothing is stored)",
    NoteMessage.invalidId,
    AttachmentMessage.filenameTooLong,
    AttachmentMessage.invalidLength,
    AttachmentMessage.lengthMismatch,
  ),
  "408": jsonError("The body took longer than its upload may (nothing is stored)", AttachmentMessage.uploadTooSlow),
  "409": jsonError(`The note already has ${MAX_ATTACHMENTS_PER_NOTE} attachments`, AttachmentMessage.tooMany),
  "411": jsonError("No Content-Length (a chunked upload)", AttachmentMessage.lengthRequired),
  "413": jsonError(
    "Content-Length over ATTACHMENT_MAX_BYTES (checked before any byte is read), or the account's ATTACHMENT_QUOTA_BYTES would be passed",
    AttachmentMessage.tooLarge,
    AttachmentMessage.quotaFull,
  ),
  "429": throttled(jsonError("Per-client rate limit", NoteMessage.clientThrottled)),
};

export const createdAnswer = json("The attachment, stored", attachmentSchema, {
  Location: header("`/notes/{id}/attachments/{attachmentId}`"),
});
