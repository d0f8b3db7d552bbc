import { Hono } from "hono";
import { describeRoute, json, jsonError } from "../../lib/describe";
import { allowedMethods, methodNotAllowed } from "../../lib/http";
import { randomId, randomToken, sha256Hex } from "../../lib/crypto";
import { clientRateLimit } from "../../lib/request-limits";
import { noStore } from "../../lib/security-headers";
import { idParameter } from "../docs";
import { NoteMessage } from "../messages";
import { noteIdFirst } from "../middleware";
import { notesUnauthorized } from "../require-auth";
import { linkJson, linkNotFound, noteIdOf, notOwner, sharingCaller, type SharingEnv } from "./answers";
import {
  linkIdParameter,
  linkSchema,
  newLinkSchema,
  ownerOnlyAnswer,
  sharingErrors,
  sharingNotFound,
  sharingOperation,
  writeThrottled,
} from "./docs";
import { listLinks, makeLink, revokeLink } from "./link-store";
import { SharingMessage } from "./messages";
import { LINK_TOKEN_BYTES, MAX_LINKS_PER_NOTE } from "./policy";
import { SHARED_PATH } from "./shared-routes";

/**
 * A note's public links (docs/sharing.md), mounted at /notes/{id}/links ahead of the notes' own routes: only the
 * note's owner makes, lists and revokes them (a grantee gets a 403, anyone else the contract's 404). Each handler
 * reads as its flow and leaves the SQL to link-store.ts.
 */
export const linksApp = new Hono<SharingEnv>()
  .use(sharingCaller)
  .use(
    clientRateLimit(
      (env) => ({ client: env.NOTES_RATE_LIMITER, network: env.NOTES_RATE_LIMITER_IPV6_48 }),
      ["POST", "DELETE"],
      NoteMessage.clientThrottled,
    ),
  )
  // A token is a secret: its answer is never kept.
  .use(noStore())
  .post(
    "/",
    describeRoute({
      ...sharingOperation,
      summary: "Make a public link to a note",
      description:
        `Anyone with the link reads the note's title and content at \`GET /shared/{token}\`, without an account, until it is revoked. ` +
        `The token (${LINK_TOKEN_BYTES * 8} random bits) is shown only in this answer: the service keeps its hash. At most ${MAX_LINKS_PER_NOTE} live links per note. Owner only.`,
      parameters: [idParameter],
      responses: {
        "201": json("The link, with its token and URL", newLinkSchema),
        "400": jsonError("`{id}` is not an integer", NoteMessage.invalidId),
        "403": ownerOnlyAnswer(SharingMessage.ownerOnly),
        "404": sharingNotFound(),
        "409": jsonError(`The note already has ${MAX_LINKS_PER_NOTE} live links`, SharingMessage.tooManyLinks),
        "429": writeThrottled["429"],
        ...sharingErrors,
      },
    }),
    noteIdFirst,
    async (c) => {
      const noteId = noteIdOf(c);
      const { db, caller } = c.var;
      const now = Date.now();
      const id = randomId();
      const token = randomToken(LINK_TOKEN_BYTES);
      const made = await makeLink(db, caller, now, { id, noteId, tokenHash: await sha256Hex(token) });
      if (made === undefined) return notesUnauthorized(c);
      if (!made) {
        const listed = await listLinks(db, caller, now, noteId);
        if (!listed) return notesUnauthorized(c);
        return (
          notOwner(c, listed.role, SharingMessage.ownerOnly) ?? c.json({ error: SharingMessage.tooManyLinks }, 409)
        );
      }
      const url = `${new URL(c.req.url).origin}${SHARED_PATH}/${token}`;
      return c.json({ id, token, url, created_at: new Date(now).toISOString() }, 201);
    },
  )
  .get(
    "/",
    describeRoute({
      ...sharingOperation,
      summary: "List a note's public links",
      description: "The live links, oldest first, without their tokens (shown only when a link is made). Owner only.",
      parameters: [idParameter],
      responses: {
        "200": json("The links", { type: "array", items: linkSchema, maxItems: MAX_LINKS_PER_NOTE }),
        "400": jsonError("`{id}` is not an integer", NoteMessage.invalidId),
        "403": ownerOnlyAnswer(SharingMessage.ownerOnly),
        "404": sharingNotFound(),
        ...sharingErrors,
      },
    }),
    noteIdFirst,
    async (c) => {
      const { db, caller } = c.var;
      const listed = await listLinks(db, caller, Date.now(), noteIdOf(c));
      if (!listed) return notesUnauthorized(c);
      return notOwner(c, listed.role, SharingMessage.ownerOnly) ?? c.json(listed.links.map(linkJson), 200);
    },
  )
  .delete(
    "/:linkId",
    describeRoute({
      ...sharingOperation,
      summary: "Revoke a public link",
      description: "At once: from this answer on, its `/shared/{token}` answers 404. Owner only.",
      parameters: [idParameter, linkIdParameter],
      responses: {
        "204": { description: "Revoked" },
        "400": jsonError("`{id}` is not an integer", NoteMessage.invalidId),
        "403": ownerOnlyAnswer(SharingMessage.ownerOnly),
        "404": sharingNotFound(SharingMessage.linkNotFound),
        "429": writeThrottled["429"],
        ...sharingErrors,
      },
    }),
    noteIdFirst,
    async (c) => {
      const noteId = noteIdOf(c);
      const { db, caller } = c.var;
      const now = Date.now();
      const revoked = await revokeLink(db, caller, now, { id: c.req.param("linkId"), noteId });
      if (revoked === undefined) return notesUnauthorized(c);
      if (revoked) return c.body(null, 204);
      const listed = await listLinks(db, caller, now, noteId);
      if (!listed) return notesUnauthorized(c);
      return notOwner(c, listed.role, SharingMessage.ownerOnly) ?? linkNotFound(c);
    },
  );

// Any other method is a 405, as on every other path; outside the chain, so the app's type lists only real routes.
for (const [path, allow] of allowedMethods(linksApp.routes)) linksApp.all(path, noteIdFirst, methodNotAllowed(allow));
