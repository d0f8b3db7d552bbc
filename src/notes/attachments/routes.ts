import { Hono, type Context } from "hono";
import { describeRoute, json } from "../../lib/describe";
import { allowedMethods, methodNotAllowed } from "../../lib/http";
import { randomId } from "../../lib/crypto";
import { clientRateLimit } from "../../lib/request-limits";
import { noStore } from "../../lib/security-headers";
import { queryParams } from "../../lib/validation";
import { forbidden, notFound, tell } from "../answers";
import { idParameter } from "../docs";
import { NoteMessage } from "../messages";
import { noteIdFirst } from "../middleware";
import { notesUnauthorized } from "../require-auth";
import { parseNoteId } from "../requests";
import {
  accountsOnly,
  attachmentJson,
  attachmentNotFound,
  attachmentPath,
  keepsNoCacheControl,
  type AttachmentsEnv,
} from "./answers";
import {
  attachmentErrors,
  attachmentIdParameter,
  attachmentListSchema,
  attachmentsOperation,
  createdAnswer,
  downloadAnswers,
  rangeParameters,
  uploadBody,
  uploadErrors,
} from "./docs";
import { AttachmentMessage } from "./messages";
import { MAX_ATTACHMENTS_PER_NOTE, UPLOAD_WINDOW_MS } from "./policy";
import { serveAttachment } from "./serve";
import { UploadQuery } from "./shapes";
import { deleteAttachment, listAttachments, readAttachment, reserveUpload, roomOn } from "./store";
import { finishUpload, removeObject } from "./uploads";

/**
 * The attachments of a note (docs/attachments.md), mounted at /notes/{id}/attachments ahead of the notes'
 * own routes (notes/routes.ts), whose middleware (a 1 MiB body limit among it) therefore never runs for them.
 * Each handler reads as its flow and leaves the SQL to store.ts.
 */

const noteIdOf = (c: Context) => parseNoteId(c.req.param("id") ?? "");

/** A Content-Length as a number of bytes, or undefined when it is not one. */
function byteCount(header: string): number | undefined {
  return /^\s*\d{1,16}\s*$/.test(header) ? Number(header) : undefined;
}

/**
 * Why a reservation was refused: the caller may not see the note (404) or only read it (403), it is full (409), or
 * its owner's quota is (413).
 */
async function refusal(c: Context<AttachmentsEnv>, noteId: number, now: number) {
  const room = await roomOn(c.var.db, c.var.caller, now, noteId);
  if (room === undefined) return notesUnauthorized(c);
  if (room === null) return notFound(c);
  if (room.role === "viewer") return forbidden(c, NoteMessage.viewerCannotChange);
  if (room.count >= MAX_ATTACHMENTS_PER_NOTE) return c.json({ error: AttachmentMessage.tooMany }, 409);
  return c.json({ error: AttachmentMessage.quotaFull }, 413);
}

export const attachmentsApp = new Hono<AttachmentsEnv>()
  .use(accountsOnly)
  .use(
    clientRateLimit(
      (env) => ({ client: env.NOTES_RATE_LIMITER, network: env.NOTES_RATE_LIMITER_IPV6_48 }),
      ["POST", "DELETE"],
      NoteMessage.clientThrottled,
    ),
  )
  // Private data: not kept, except the bytes themselves, which say `private` (the user's own browser may keep them).
  .use(noStore(keepsNoCacheControl))
  .post(
    "/",
    describeRoute({
      ...attachmentsOperation,
      summary: "Attach a file to a note",
      description:
        "The file's bytes are the body, streamed to storage and hashed on the way; `Content-Length` is required. " +
        "The type is decided from the bytes (PNG, JPEG, GIF, WebP, PDF, UTF-8 text; anything else `application/octet-stream`). " +
        `A note holds at most ${MAX_ATTACHMENTS_PER_NOTE} attachments; a file at most ATTACHMENT_MAX_BYTES; an account at most ATTACHMENT_QUOTA_BYTES in all. ` +
        "Moves the note's revision (ETag, changes feed, live updates).",
      parameters: [idParameter],
      requestBody: uploadBody,
      responses: { "201": createdAnswer, ...uploadErrors, ...attachmentErrors },
    }),
    noteIdFirst,
    queryParams(UploadQuery),
    async (c) => {
      const noteId = noteIdOf(c);
      const { filename } = c.req.valid("query");
      const { db, caller, config, log } = c.var;
      const length = c.req.header("Content-Length");
      if (length === undefined) return c.json({ error: AttachmentMessage.lengthRequired }, 411);
      const size = byteCount(length);
      if (size === undefined) return c.json({ error: AttachmentMessage.invalidLength }, 400);
      if (size > config.attachments.maxBytes) return c.json({ error: AttachmentMessage.tooLarge }, 413);
      const now = Date.now();
      const id = randomId();
      const values = { id, noteId, filename, size, quota: config.attachments.quotaBytes };
      const reserved = await reserveUpload(db, caller, now, values);
      if (reserved === undefined) return notesUnauthorized(c);
      if (!reserved) return refusal(c, noteId, now);
      const upload = { body: c.req.raw.body, length: size, deadline: now + UPLOAD_WINDOW_MS };
      // The clean-up after a failure outlives a client that went away mid-upload.
      const target = { db, caller, bucket: c.env.ATTACHMENTS, log, watching: c.var.watchers.readers(noteId) };
      const finishing = finishUpload(target, { id, noteId }, upload);
      c.executionCtx.waitUntil(finishing.catch(() => undefined));
      const outcome = await finishing;
      if ("refused" in outcome)
        return outcome.refused === "length"
          ? c.json({ error: AttachmentMessage.lengthMismatch }, 400)
          : c.json({ error: AttachmentMessage.uploadTooSlow }, 408);
      if ("gone" in outcome) return outcome.gone === "session" ? notesUnauthorized(c) : notFound(c);
      tell(c, outcome.watched);
      const row = { id, note_id: noteId, filename, size, created_at: now, ...outcome.stored };
      const body = await attachmentJson(
        { url: c.req.url, config },
        { ...row, content_type: outcome.stored.contentType },
      );
      return c.json(body, 201, { Location: attachmentPath(noteId, id) });
    },
  )
  .get(
    "/",
    describeRoute({
      ...attachmentsOperation,
      summary: "List a note's attachments",
      description: "Oldest first, each with a fresh signed `url`. Uploads under way are not listed.",
      parameters: [idParameter],
      responses: { "200": json("The attachments", attachmentListSchema), ...attachmentErrors },
    }),
    noteIdFirst,
    async (c) => {
      const noteId = noteIdOf(c);
      const { db, caller, config } = c.var;
      const rows = await listAttachments(db, caller, Date.now(), noteId);
      if (rows === undefined) return notesUnauthorized(c);
      if (rows === null) return notFound(c);
      const links = { url: c.req.url, config };
      return c.json(await Promise.all(rows.map((row) => attachmentJson(links, row))), 200);
    },
  )
  .get(
    "/:attachmentId",
    describeRoute({
      ...attachmentsOperation,
      summary: "Download an attachment",
      description:
        "The exact bytes, with `ETag` (304 on If-None-Match) and one byte range on request (206, or 416 outside the file).",
      parameters: [idParameter, attachmentIdParameter, ...rangeParameters],
      responses: { ...downloadAnswers, ...attachmentErrors },
    }),
    noteIdFirst,
    async (c) => {
      const noteId = noteIdOf(c);
      const { db, caller } = c.var;
      const found = await readAttachment(db, caller, Date.now(), { id: c.req.param("attachmentId"), noteId });
      if (found === undefined) return notesUnauthorized(c);
      if (!found) return attachmentNotFound(c);
      return serveAttachment(c, c.env.ATTACHMENTS, found);
    },
  )
  .delete(
    "/:attachmentId",
    describeRoute({
      ...attachmentsOperation,
      summary: "Delete an attachment",
      description:
        "Its file is deleted and its bytes leave the account's quota at once. Moves the note's revision (ETag, changes feed, live updates).",
      parameters: [idParameter, attachmentIdParameter],
      responses: { "204": { description: "Deleted" }, "429": uploadErrors["429"], ...attachmentErrors },
    }),
    noteIdFirst,
    async (c) => {
      const noteId = noteIdOf(c);
      const { db, caller, log } = c.var;
      const id = c.req.param("attachmentId");
      const now = Date.now();
      const done = await deleteAttachment(db, caller, now, { id, noteId }, c.var.watchers.readers(noteId));
      if (done === undefined) return notesUnauthorized(c);
      if (!done.deleted) {
        const room = await roomOn(db, caller, now, noteId);
        if (room === undefined) return notesUnauthorized(c);
        return room?.role === "viewer" ? forbidden(c, NoteMessage.viewerCannotChange) : attachmentNotFound(c);
      }
      tell(c, done.watched);
      await removeObject(c.env.ATTACHMENTS, log, id);
      return c.body(null, 204);
    },
  );

// Any other method is a 405, as on every other path; outside the chain, so the app's type lists only real routes.
for (const [path, allow] of allowedMethods(attachmentsApp.routes)) attachmentsApp.all(path, methodNotAllowed(allow));
