import * as v from "valibot";
import { DEFAULT_FILENAME, MAX_ATTACHMENTS_PER_NOTE, MAX_FILENAME_CHARS } from "./policy";
import { AttachmentMessage } from "./messages";
import { SNIFFED_TYPES } from "./sniff";

/** The request and answer shapes of attachments: the handlers' types and the OpenAPI schemas derive from these. */

/** An attachment as the API shows it. */
export const Attachment = v.object({
  id: v.pipe(v.string(), v.description("Opaque, 22 characters (128 random bits, base64url)")),
  note_id: v.pipe(v.number(), v.integer(), v.description("The note it belongs to")),
  filename: v.pipe(
    v.string(),
    v.description(
      `The name given at upload, without path separators or control characters (\`${DEFAULT_FILENAME}\` without one)`,
    ),
  ),
  content_type: v.pipe(
    v.picklist(SNIFFED_TYPES),
    v.description("Decided by the service from the bytes themselves, never taken from the client"),
  ),
  size: v.pipe(v.number(), v.integer(), v.description("Bytes")),
  sha256: v.pipe(
    v.string(),
    v.regex(/^[0-9a-f]{64}$/),
    v.description("SHA-256 of the bytes, hex; the download's ETag"),
  ),
  created_at: v.pipe(v.string(), v.isoTimestamp(), v.description("ISO 8601, when the upload began")),
  url: v.pipe(
    v.string(),
    v.description(
      "A signed link to the bytes that needs no token (for `<img src>` and browser downloads), valid ATTACHMENT_URL_TTL_SECONDS; list again for a fresh one",
    ),
  ),
});
export type AttachmentJson = v.InferOutput<typeof Attachment>;

/** Path separators and control characters, taken out of a filename (bidirectional overrides, which can disguise an extension, too). */
const UNSAFE_IN_FILENAME = /[/\\\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

/** A filename as stored: cleaned, trimmed, and the default when nothing (or only dots) is left. */
export function cleanFilename(raw: string): string {
  const cleaned = raw.replace(UNSAFE_IN_FILENAME, "").trim();
  return /^\.*$/.test(cleaned) ? DEFAULT_FILENAME : cleaned;
}

/** The query of an upload. */
export const UploadQuery = v.object({
  filename: v.optional(
    v.pipe(
      v.string(),
      v.check((raw) => [...raw].length <= MAX_FILENAME_CHARS, AttachmentMessage.filenameTooLong),
      v.description(
        `The file's name, at most ${MAX_FILENAME_CHARS} characters; path separators and control characters are removed. Default \`${DEFAULT_FILENAME}\`.`,
      ),
      v.transform(cleanFilename),
    ),
    DEFAULT_FILENAME,
  ),
});

/** The note's attachments, oldest first: at most MAX_ATTACHMENTS_PER_NOTE. */
export const AttachmentList = v.pipe(
  v.array(Attachment),
  v.maxLength(MAX_ATTACHMENTS_PER_NOTE),
  v.description(`The note's attachments, oldest first (at most ${MAX_ATTACHMENTS_PER_NOTE}), each with a fresh url`),
);
