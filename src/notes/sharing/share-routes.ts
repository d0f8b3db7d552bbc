import { clientKey } from "../../lib/client-key";
import { Hono, type Context } from "hono";
import { createMiddleware } from "hono/factory";
import { describeRoute, json, jsonError, throttled } from "../../lib/describe";
import { allowedMethods, methodNotAllowed, setRetryAfter } from "../../lib/http";
import { randomId } from "../../lib/crypto";
import { clientRateLimit, limitBody } from "../../lib/request-limits";
import { noStore } from "../../lib/security-headers";
import { jsonBody } from "../../lib/validation";
import { notFound, tell } from "../answers";
import { idParameter } from "../docs";
import { NoteMessage } from "../messages";
import { noteIdFirst } from "../middleware";
import { notesUnauthorized } from "../require-auth";
import { noteIdOf, notOwner, shareJson, shareNotFound, sharingCaller, type SharingEnv } from "./answers";
import {
  bodyErrors,
  ownerOnlyAnswer,
  shareIdParameter,
  shareSchema,
  sharingErrors,
  sharingNotFound,
  sharingOperation,
  writeThrottled,
} from "./docs";
import { SharingMessage } from "./messages";
import {
  MAX_SHARES_PER_NOTE,
  NEW_SHARE_ADDRESSES_PER_DAY,
  SHARE_ADDRESS_WINDOW_MS,
  SHARE_BODY_LIMIT_BYTES,
} from "./policy";
import { RoleBody, ShareBody } from "./shapes";
import { createShare, endShare, listShares, setShareRole, whyNotShared } from "./share-store";
import type { ShareRole } from "./schema";
import type { AppEnv } from "../../types";

/**
 * A note's shares with accounts (docs/sharing.md), mounted at /notes/{id}/shares ahead of the notes' own routes:
 * the owner shares, lists, changes and revokes; a grantee sees its own share and may delete it to leave. Each
 * handler reads as its flow and leaves the SQL to share-store.ts.
 */

/**
 * The mail of a new share, from the accounts area (index.ts): to `to`, saying that the owner (`sender.account`) shared
 * a note, counted against the owner's, the requesting client's (`sender.client`, clientKey) and the deployment's mail
 * budgets, on the request's database, settings and log. Never throws.
 */
export type ShareMail = (
  request: Pick<AppEnv["Variables"], "db" | "config" | "log">,
  sender: { account: number; client: string },
  to: string,
) => Promise<void>;

/** The environment of the share routes: a caller, and the mail that tells an address it was shared with (sharesApp). */
type SharesEnv = SharingEnv & { Variables: { shareMail: ShareMail } };

/** Why a share was refused, from what whyNotShared read: the answer, in the order the rules are checked. */
async function refused(
  c: Context<SharesEnv>,
  now: number,
  values: { id: string; noteId: number; email: string; role: ShareRole },
) {
  const why = await whyNotShared(c.var.db, c.var.caller, now, values);
  if (why === undefined) return notesUnauthorized(c);
  if (why === null) return notFound(c);
  const denied = notOwner(c, why.role, SharingMessage.ownerOnly);
  if (denied) return denied;
  if (why.self) return c.json({ error: SharingMessage.shareWithSelf }, 400);
  if (why.taken) return c.json({ error: SharingMessage.alreadyShared }, 409);
  if (why.shares >= MAX_SHARES_PER_NOTE) return c.json({ error: SharingMessage.tooManyShares }, 409);
  if (!why.mailed && why.addresses >= NEW_SHARE_ADDRESSES_PER_DAY) {
    setRetryAfter(c, (why.oldest ?? now) + SHARE_ADDRESS_WINDOW_MS - now);
    return c.json({ error: SharingMessage.tooManyAddresses }, 429);
  }
  // Every rule held when read: a concurrent request took what this one needed (the same address).
  return c.json({ error: SharingMessage.alreadyShared }, 409);
}

/** The routes at /notes/{id}/shares, with `c.var.shareMail` set by sharesApp. */
const shareRoutes = new Hono<SharesEnv>()
  .use(sharingCaller)
  .use(limitBody(SHARE_BODY_LIMIT_BYTES, SharingMessage.bodyTooLarge))
  .use(
    clientRateLimit(
      (env) => ({ client: env.NOTES_RATE_LIMITER, network: env.NOTES_RATE_LIMITER_IPV6_48 }),
      ["POST", "PATCH", "DELETE"],
      NoteMessage.clientThrottled,
    ),
  )
  .use(noStore())
  .post(
    "/",
    describeRoute({
      ...sharingOperation,
      summary: "Share a note with an address",
      description:
        "The account that has verified the address (now, or once it does) reads the note, and as an `editor` changes it and its attachments. " +
        "The answer is the same whether or not an account holds the address; the address gets a mail saying who shared a note. " +
        `At most ${MAX_SHARES_PER_NOTE} shares per note, and ${NEW_SHARE_ADDRESSES_PER_DAY} new addresses per owner in a day. Owner only.`,
      parameters: [idParameter],
      requestExample: { email: "grace@example.com", role: "viewer" },
      responses: {
        "201": json("The share", shareSchema),
        "400": bodyErrors(
          SharingMessage.shareWithSelf,
          SharingMessage.emailRequired,
          SharingMessage.emailNotString,
          SharingMessage.invalidEmail,
          SharingMessage.roleRequired,
          SharingMessage.invalidRole,
        ),
        "403": ownerOnlyAnswer(SharingMessage.ownerOnly),
        "404": sharingNotFound(),
        "409": jsonError(
          "The note is already shared with this address, or with as many as it may be",
          SharingMessage.alreadyShared,
          SharingMessage.tooManyShares,
        ),
        "413": writeThrottled["413"],
        "429": throttled(
          jsonError(
            "Per-client rate limit, or the owner's new addresses of the day",
            NoteMessage.clientThrottled,
            SharingMessage.tooManyAddresses,
          ),
        ),
        ...sharingErrors,
      },
    }),
    noteIdFirst,
    jsonBody(ShareBody),
    async (c) => {
      const noteId = noteIdOf(c);
      const { email, role } = c.req.valid("json");
      const { db, caller, watchers } = c.var;
      const now = Date.now();
      const values = { id: randomId(), noteId, email, role };
      const made = await createShare(db, caller, now, values, watchers.grantee(values.id));
      if (!made) return notesUnauthorized(c);
      if (!made.created) return refused(c, now, values);
      tell(c, made.watched);
      // After the answer, which is the same whether or not an account holds the address.
      c.executionCtx.waitUntil(c.var.shareMail(c.var, { account: caller.userId, client: clientKey(c) }, email));
      return c.json(shareJson({ ...values, created_at: now }), 201);
    },
  )
  .get(
    "/",
    describeRoute({
      ...sharingOperation,
      summary: "List a note's shares",
      description: "Oldest first. The owner sees every share; a grantee only its own, so that it can leave.",
      parameters: [idParameter],
      responses: {
        "200": json("The shares", { type: "array", items: shareSchema, maxItems: MAX_SHARES_PER_NOTE }),
        "400": jsonError("`{id}` is not an integer", NoteMessage.invalidId),
        "404": sharingNotFound(),
        ...sharingErrors,
      },
    }),
    noteIdFirst,
    async (c) => {
      const { db, caller } = c.var;
      const listed = await listShares(db, caller, Date.now(), noteIdOf(c));
      if (!listed) return notesUnauthorized(c);
      if (listed.role === null) return notFound(c);
      return c.json(listed.shares.map(shareJson), 200);
    },
  )
  .patch(
    "/:shareId",
    describeRoute({
      ...sharingOperation,
      summary: "Change a share's role",
      description: "From the next request on. Owner only.",
      parameters: [idParameter, shareIdParameter],
      requestExample: { role: "editor" },
      responses: {
        "200": json("The share", shareSchema),
        "400": bodyErrors(SharingMessage.roleRequired, SharingMessage.invalidRole),
        "403": ownerOnlyAnswer(SharingMessage.ownerOnlyRole),
        "404": sharingNotFound(SharingMessage.shareNotFound),
        ...writeThrottled,
        ...sharingErrors,
      },
    }),
    noteIdFirst,
    jsonBody(RoleBody),
    async (c) => {
      const noteId = noteIdOf(c);
      const { db, caller } = c.var;
      const now = Date.now();
      const values = { id: c.req.param("shareId"), noteId, role: c.req.valid("json").role };
      const changed = await setShareRole(db, caller, now, values);
      if (changed === undefined) return notesUnauthorized(c);
      if (changed) return c.json(shareJson(changed), 200);
      const listed = await listShares(db, caller, now, noteId);
      if (!listed) return notesUnauthorized(c);
      return notOwner(c, listed.role, SharingMessage.ownerOnlyRole) ?? shareNotFound(c);
    },
  )
  .delete(
    "/:shareId",
    describeRoute({
      ...sharingOperation,
      summary: "End a share: revoke it, or leave the note",
      description:
        "By the owner (revoking it) or by its grantee (leaving the note), at once: from this answer on, the grantee's requests for the note answer 404, " +
        "and its changes feed reports the note deleted.",
      parameters: [idParameter, shareIdParameter],
      responses: {
        "204": { description: "Ended" },
        "400": jsonError("`{id}` is not an integer", NoteMessage.invalidId),
        "404": sharingNotFound(SharingMessage.shareNotFound),
        "429": writeThrottled["429"],
        ...sharingErrors,
      },
    }),
    noteIdFirst,
    async (c) => {
      const noteId = noteIdOf(c);
      const { db, caller, watchers } = c.var;
      const id = c.req.param("shareId");
      const now = Date.now();
      const ended = await endShare(db, caller, now, { id, noteId }, watchers.grantee(id));
      if (!ended) return notesUnauthorized(c);
      if (ended.ended) {
        tell(c, ended.watched);
        return c.body(null, 204);
      }
      const listed = await listShares(db, caller, now, noteId);
      if (!listed) return notesUnauthorized(c);
      return listed.role === null ? notFound(c) : shareNotFound(c);
    },
  );

/** The shares of a note, for the routes at /notes/{id}/shares; `shareMail` tells an address it was shared with. */
export function sharesApp(shareMail: ShareMail) {
  const app = new Hono<SharesEnv>()
    .use(
      createMiddleware<SharesEnv>(async (c, next) => {
        c.set("shareMail", shareMail);
        await next();
      }),
    )
    .route("/", shareRoutes);
  // Any other method is a 405, as on every other path; outside the chain, so the app's type lists only real routes.
  for (const [path, allow] of allowedMethods(app.routes)) app.all(path, noteIdFirst, methodNotAllowed(allow));
  return app;
}
