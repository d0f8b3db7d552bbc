import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import { databaseOf } from "../../db/client";
import { describeRoute, json, jsonError, throttled } from "../../lib/describe";
import { allowedMethods, methodNotAllowed, setAnswerHeader } from "../../lib/http";
import { sha256Hex } from "../../lib/crypto";
import { clientRateLimit } from "../../lib/request-limits";
import type { AppEnv } from "../../types";
import { jsonText } from "../answers";
import { notesErrors } from "../docs";
import { needsAccounts } from "./answers";
import { sharedNoteSchema } from "./docs";
import { sharedNote } from "./link-store";
import { SharingMessage } from "./messages";
import type { SharedNoteJson } from "./shapes";

/**
 * GET /shared/{token}: a public link's note, without any token of an account (docs/sharing.md). Mounted at the
 * root by index.ts. The token is looked up by its hash, so a revoked link (its row gone) answers 404 from the next
 * request on; nothing may keep the answer (no cache, no search index, no referrer carrying the token elsewhere).
 */

/** Where public links are served, mounted at the root (index.ts). */
export const SHARED_PATH = "/shared";

/** What a token looks like (base64url, of any length a link of ours could have): anything else is not looked up. */
const TOKEN = /^[A-Za-z0-9_-]{22,128}$/;

/**
 * The path as the request log writes it: a link's token is a secret (anyone holding it reads the note), so it never
 * reaches a log line (index.ts).
 */
export function loggedPath(path: string): string {
  return path.startsWith(`${SHARED_PATH}/`) ? `${SHARED_PATH}/…` : path;
}

/** The headers of every answer of a public link, a 404 or a 429 included. */
const SHARED_HEADERS = {
  "Cache-Control": "no-store",
  "X-Robots-Tag": "noindex",
  "Referrer-Policy": "no-referrer",
} as const;

const sharedHeaders = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  for (const [name, value] of Object.entries(SHARED_HEADERS)) setAnswerHeader(c, name, value);
});

const header = (description: string) => ({ description, schema: { type: "string" } });
const answerHeaders = {
  "Cache-Control": header("`no-store`"),
  "X-Robots-Tag": header("`noindex`"),
  "Referrer-Policy": header("`no-referrer`"),
};

export const sharedLinks = new Hono<AppEnv>()
  .use(sharedHeaders)
  .use(
    clientRateLimit(
      (env) => ({ client: env.SHARED_RATE_LIMITER, network: env.SHARED_RATE_LIMITER_IPV6_48 }),
      ["GET"],
      SharingMessage.sharedThrottled,
    ),
  )
  .get(
    "/:token",
    describeRoute({
      tags: ["notes"],
      security: [{}],
      summary: "A note through its public link",
      description:
        "The note as it is now: its title, content, `created_at` and `updated_at` (when its title or content last changed), and nothing else about it or its owner. " +
        "No account needed. An unknown or revoked link, or one whose note or owner was deleted, is a 404. Counted against a per-client limit (SHARED_RATE_LIMITER).",
      parameters: [
        { name: "token", in: "path", required: true, description: "The link's token", schema: { type: "string" } },
      ],
      responses: {
        "200": json("The note", sharedNoteSchema, answerHeaders),
        "404": {
          ...jsonError(
            "Unknown, revoked, or its note or owner deleted; or notes are public (NOTES_AUTH=off), where there are no links",
            SharingMessage.sharedNotFound,
            SharingMessage.needsAccounts,
          ),
          headers: answerHeaders,
        },
        "429": throttled(jsonError("Per-client limit of public links", SharingMessage.sharedThrottled)),
        "500": notesErrors["500"],
      },
    }),
    async (c) => {
      if (c.var.config.notesAuth !== "required") return needsAccounts(c);
      const token = c.req.param("token");
      // Read at the primary, where a revocation is written: a replica that lags must not show a revoked link's note.
      const primary = databaseOf(c.env.DB.withSession("first-primary"));
      const found = TOKEN.test(token) ? await sharedNote(primary, await sha256Hex(token)) : undefined;
      if (found === undefined) return c.json({ error: SharingMessage.sharedNotFound }, 404);
      return jsonText<SharedNoteJson, 200>(c, found, 200);
    },
  );

for (const [path, allow] of allowedMethods(sharedLinks.routes)) sharedLinks.all(path, methodNotAllowed(allow));
