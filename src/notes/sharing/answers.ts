import type { Context } from "hono";
import { forbidden, notFound } from "../answers";
import { requireAccount, type AccountsEnv } from "../require-auth";
import { parseNoteId } from "../requests";
import { SharingMessage } from "./messages";
import type { StoredLink } from "./link-store";
import type { LinkJson, ShareJson } from "./shapes";
import type { StoredShare } from "./share-store";

/** What the sharing routes share: who may call them, their common answers, the JSON of links and shares. */

/** The environment of the sharing routes that act for an account: a caller, always. */
export type SharingEnv = AccountsEnv;

/** With public notes there are no accounts to share with: every sharing route answers this 404. */
export const needsAccounts = (c: Context) => c.json({ error: SharingMessage.needsAccounts }, 404);

/** NOTES_AUTH=required, and `Authorization: Bearer <access token>`: `c.var.caller` (requireAccount). */
export const sharingCaller = requireAccount(needsAccounts);

/** The note id of the path (the contract's 400 when it is not one; checked first by noteIdFirst). */
export const noteIdOf = (c: Context) => parseNoteId(c.req.param("id") ?? "");

/**
 * The answer to a refused owner-only request, from what the caller is to the note: 404 when it may not see it (or
 * the note is gone), 403 for a grantee; undefined for the owner, whose refusal has another reason.
 */
export function notOwner(c: Context, role: string | null, message: string) {
  if (role === null) return notFound(c);
  if (role !== "owner") return forbidden(c, message);
  return undefined;
}

export const shareNotFound = (c: Context) => c.json({ error: SharingMessage.shareNotFound }, 404);
export const linkNotFound = (c: Context) => c.json({ error: SharingMessage.linkNotFound }, 404);

export const linkJson = (row: StoredLink): LinkJson => ({
  id: row.id,
  created_at: new Date(row.created_at).toISOString(),
});

export const shareJson = (row: StoredShare): ShareJson => ({
  id: row.id,
  email: row.email,
  role: row.role,
  created_at: new Date(row.created_at).toISOString(),
});
