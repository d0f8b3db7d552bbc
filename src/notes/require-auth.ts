import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { bearerClaims } from "../auth/caller";
import type { AccessClaims } from "../lib/access-token";
import type { AppEnv } from "../types";
import { NoteMessage } from "./messages";

/** The notes area's 401: JSON, with the scheme to use. */
export function notesUnauthorized(c: Context) {
  return c.json({ error: NoteMessage.unauthorized }, 401, { "WWW-Authenticate": "Bearer" });
}

/** The environment of the notes handlers: the caller whose notes they are, or undefined while notes are public. */
export type NotesEnv = AppEnv & { Variables: { caller: AccessClaims | undefined } };

/**
 * NOTES_AUTH=required: every notes call needs `Authorization: Bearer <access token>`, and `c.var.caller`
 * holds its user and session: every query of the notes area is limited to that user's notes and runs in
 * one round trip with the check that the session is live (see asCaller). With NOTES_AUTH=off (the
 * spec's behaviour) notes are public and `caller` is undefined.
 */
export const requireNotesAuth = createMiddleware<NotesEnv>(async (c, next) => {
  const config = c.get("config");
  if (config.notesAuth === "off") {
    c.set("caller", undefined);
    return next();
  }
  const caller = await bearerClaims(c.req.header("Authorization"), config.jwtSecret);
  if (!caller) return notesUnauthorized(c);
  c.set("caller", caller);
  await next();
});

/** The environment of the routes that only exist with accounts (attachments, sharing): a caller, always. */
export type AccountsEnv = AppEnv & { Variables: { caller: AccessClaims } };

/**
 * The middleware of routes that only exist with accounts: with public notes (NOTES_AUTH=off) every one answers
 * `whenPublic`; otherwise `Authorization: Bearer <access token>` is required and sets `c.var.caller`. The session
 * itself is checked by each statement's batch (asCaller), as for notes.
 */
export function requireAccount(whenPublic: (c: Context) => Response) {
  return createMiddleware<AccountsEnv>(async (c, next) => {
    const { config } = c.var;
    if (config.notesAuth !== "required") return whenPublic(c);
    const caller = await bearerClaims(c.req.header("Authorization"), config.jwtSecret);
    if (!caller) return notesUnauthorized(c);
    c.set("caller", caller);
    await next();
  });
}
