import type { Context } from "hono";
import type { Config } from "../../config";
import { requireAccount, type AccountsEnv } from "../require-auth";
import { signedLink } from "./links";
import { AttachmentMessage } from "./messages";
import type { AttachmentJson } from "./shapes";
import type { StoredAttachment } from "./store";

/** What the attachment routes share: who may call them, their common answers, an attachment's JSON. */

/** The environment of the Bearer routes: a caller, always (attachments need accounts). */
export type AttachmentsEnv = AccountsEnv;

/** With public notes there is no account to own a file: every attachment route answers this 404. */
export const needsAccounts = (c: Context) => c.json({ error: AttachmentMessage.needsAccounts }, 404);

export const attachmentNotFound = (c: Context) => c.json({ error: AttachmentMessage.notFound }, 404);

/** NOTES_AUTH=required, and `Authorization: Bearer <access token>`: `c.var.caller` (requireAccount). */
export const accountsOnly = requireAccount(needsAccounts);

/** Only answers that say nothing of their own about caching are not to be kept (the bytes are `private`). */
export const keepsNoCacheControl = (c: Context) => !c.res.headers.has("Cache-Control");

/** Where an answer's links point and how they are signed: the request's origin, and the settings. */
export interface LinkContext {
  url: string;
  config: Config;
}

/** An attachment as the API shows it, with a signed link made now. */
export async function attachmentJson({ url, config }: LinkContext, row: StoredAttachment): Promise<AttachmentJson> {
  const link = await signedLink(
    new URL(url).origin,
    config.jwtSecret,
    row.id,
    Date.now(),
    config.attachments.urlTtlSeconds,
  );
  return {
    id: row.id,
    note_id: row.note_id,
    filename: row.filename,
    content_type: row.content_type,
    size: row.size,
    sha256: row.sha256,
    created_at: new Date(row.created_at).toISOString(),
    url: link,
  };
}

/** The path of an attachment on the Bearer routes (the upload's Location). */
export const attachmentPath = (noteId: number, id: string) => `/notes/${noteId}/attachments/${encodeURIComponent(id)}`;
