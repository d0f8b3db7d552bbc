import { createMiddleware } from "hono/factory";
import { ConfigError } from "../config";
import { verifyLoginToken } from "../lib/jwt";
import type { AppEnv } from "../types";
import { NoteMessage } from "./schemas";

/**
 * NOTES_AUTH=required: every notes call needs `Authorization: Bearer <login JWT>`, and `c.var.owner`
 * becomes the caller's user id, which every query of the notes area filters on. With NOTES_AUTH=off
 * (the spec's behaviour) notes are public and `owner` stays undefined.
 */
export const requireNotesAuth = createMiddleware<AppEnv>(async (c, next) => {
  const { config } = c.var;
  if (config.notesAuth === "off") return next();
  if (!config.jwtSecret) throw new ConfigError("JWT_SECRET_KEY is not set; NOTES_AUTH=required cannot check tokens");

  const token = /^Bearer +([^ ]+)$/i.exec(c.req.header("Authorization") ?? "")?.[1];
  const userId = token ? await verifyLoginToken(token, config.jwtSecret).then((claims) => Number(claims.id), () => NaN) : NaN;
  if (!Number.isSafeInteger(userId)) {
    return c.json({ error: NoteMessage.unauthorized }, 401, { "WWW-Authenticate": "Bearer" });
  }
  c.set("owner", userId);
  await next();
});
