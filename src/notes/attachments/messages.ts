import { MAX_ATTACHMENTS_PER_NOTE, MAX_FILENAME_CHARS } from "./policy";

/** Every JSON error message of the attachment routes, written once (docs/attachments.md lists them). */
export const AttachmentMessage = {
  needsAccounts: "Attachments need accounts (NOTES_AUTH=required): with public notes there are none",
  notFound: "Attachment not found",
  lengthRequired: "Content-Length is required: send the file's size in bytes with its bytes",
  invalidLength: "Content-Length must be a whole number of bytes",
  lengthMismatch: "The body was shorter or longer than its Content-Length; nothing was stored",
  tooLarge: "The file is larger than this server takes (ATTACHMENT_MAX_BYTES); nothing was stored",
  quotaFull:
    "The account's attachment storage is full (ATTACHMENT_QUOTA_BYTES): delete attachments to make room; nothing was stored",
  tooMany: `A note holds at most ${MAX_ATTACHMENTS_PER_NOTE} attachments; nothing was stored`,
  filenameTooLong: `filename must be at most ${MAX_FILENAME_CHARS} characters`,
  uploadTooSlow: "The upload took longer than it may; nothing was stored",
  rangeNotSatisfiable: "The range asked for is outside the file",
  invalidLink: "This link is not valid: its attachment, expiry and signature do not belong together",
  expiredLink: "This link has expired: list the note's attachments again for a fresh one",
} as const;
