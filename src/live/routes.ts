import { Hono, type Context } from "hono";
import { createMiddleware } from "hono/factory";
import { bearerOnly, describeRoute, json, jsonError, ref } from "../lib/describe";
import { allowedMethods, methodNotAllowed } from "../lib/http";
import { clientRateLimit } from "../lib/request-limits";
import { noStore } from "../lib/security-headers";
import { SECOND } from "../lib/units";
import { queryParams } from "../lib/validation";
import { notesErrors } from "../notes/docs";
import { NoteMessage } from "../notes/messages";
import { notesUnauthorized, requireNotesAuth } from "../notes/require-auth";
import type { AppEnv } from "../types";
import { connectRequest } from "./hub";
import { LiveMessage } from "./messages";
import { hubOf } from "./notify";
import { CLOSE_SESSION_ENDED, Frame, TICKET_TTL_MS } from "./protocol";
import { LiveQuery, type LiveTicketJson } from "./requests";
import { claimTicket, hashOf, issueTicket, newTicket, TICKET_FORMAT } from "./tickets";
import { LIVE_SOCKETS_PER_ACCOUNT_DEFAULT } from "../config/index";

/**
 * Live updates (docs/live.md): POST /changes/live-ticket and GET /changes/live, mounted at /changes next to
 * the feed, and before it (index.ts): their middleware is their own, per route, so the feed's (a Bearer
 * token on everything under /changes) never runs for them, and theirs never for the feed.
 */

const liveTag = { tags: ["notes"] };

/** Both routes exist only with private notes: public notes have no account to hear of. */
const privateNotesOnly = createMiddleware<AppEnv>(async (c, next) => {
  if (c.var.config.notesAuth !== "required") return c.json({ error: LiveMessage.notAvailable }, 404);
  await next();
});

/** A request that is not a WebSocket upgrade gets 426 (with the protocol to upgrade to), whatever it carries. */
const upgradeOnly = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket")
    return c.json({ error: LiveMessage.upgradeRequired }, 426, { Upgrade: "websocket" });
  await next();
});

/**
 * CORS does not cover WebSocket upgrades: any page may open one to any host, with the user's network. So
 * the Origin a browser sends must be one of CORS_ORIGINS; a client that sends none (a native app) passes.
 */
const allowedOriginOnly = createMiddleware<AppEnv>(async (c, next) => {
  const origin = c.req.header("Origin");
  if (origin !== undefined && !c.var.config.corsOrigins.includes(origin))
    return c.json({ error: LiveMessage.originRefused }, 403);
  await next();
});

const tooManySockets = (c: Context) => c.json({ error: LiveMessage.tooManySockets }, 429);

const ticketOperation = describeRoute({
  ...liveTag,
  security: bearerOnly,
  summary: "A ticket for the live-updates socket",
  description:
    "Browsers cannot send `Authorization` on a WebSocket: trade the access token for a ticket, and open `GET /changes/live?ticket=…` with it. " +
    `A ticket is good once, for ${TICKET_TTL_MS / SECOND} seconds, and only while the session that asked is live. ` +
    `An account holds at most LIVE_SOCKETS_PER_ACCOUNT (${LIVE_SOCKETS_PER_ACCOUNT_DEFAULT} by default) open sockets, tickets not yet used included. Only with NOTES_AUTH=required.`,
  responses: {
    "201": json("The ticket", ref("LiveTicket"), {
      "Cache-Control": { description: "`no-store`", schema: { type: "string" } },
    }),
    "401": notesErrors["401"],
    "404": jsonError("Notes are public (NOTES_AUTH=off): there are no live updates", LiveMessage.notAvailable),
    "429": jsonError(
      "The account has LIVE_SOCKETS_PER_ACCOUNT sockets open or about to open, or the per-client limit",
      LiveMessage.tooManySockets,
      NoteMessage.clientThrottled,
    ),
    "500": notesErrors["500"],
  },
});

const socketOperation = describeRoute({
  ...liveTag,
  security: [{}],
  summary: "The live-updates socket (WebSocket)",
  description:
    "A WebSocket upgrade (`Upgrade: websocket`), authenticated by its ticket. The server sends, as text frames: " +
    `\`${Frame.ready}\` first, once the socket is registered (pull \`GET /changes\` now: nothing after it will be missed); then ` +
    '`{"type":"changed","bookmark":"<D1 bookmark>"}` within a second or two of every write to the account\'s notes, from any device ' +
    "(pull `GET /changes` with the bookmark as `X-D1-Bookmark`). Frames carry nothing else. " +
    `Send \`${Frame.ping}\` (exactly) to keep an idle connection open: the answer is \`${Frame.pong}\`. ` +
    `The socket closes with code ${CLOSE_SESSION_ENDED} when its session ends (logout, password change, …): log in again.`,
  responses: {
    "101": { description: "Switching Protocols: the socket is open, and its first frame is `ready`" },
    "400": jsonError("No `ticket`", LiveMessage.ticketRequired),
    "401": jsonError(
      "Unknown, used or expired ticket, or its session has ended; nothing was upgraded",
      LiveMessage.invalidTicket,
    ),
    "403": jsonError(
      "An `Origin` that is not one of CORS_ORIGINS (a request without one passes)",
      LiveMessage.originRefused,
    ),
    "404": jsonError("Notes are public (NOTES_AUTH=off): there are no live updates", LiveMessage.notAvailable),
    "426": {
      ...jsonError("Not a WebSocket upgrade, whatever the ticket", LiveMessage.upgradeRequired),
      headers: { Upgrade: { schema: { type: "string", enum: ["websocket"] } } },
    },
    "429": jsonError(
      "The account has LIVE_SOCKETS_PER_ACCOUNT sockets open already (a ticket used after its place lapsed)",
      LiveMessage.tooManySockets,
    ),
    "500": notesErrors["500"],
  },
});

export const liveApp = new Hono<AppEnv>()
  .post(
    "/live-ticket",
    ticketOperation,
    privateNotesOnly,
    noStore(),
    clientRateLimit(
      (env) => ({ client: env.NOTES_RATE_LIMITER, network: env.NOTES_RATE_LIMITER_IPV6_48 }),
      ["POST"],
      NoteMessage.clientThrottled,
    ),
    requireNotesAuth,
    async (c) => {
      const { db, caller } = c.var;
      if (!caller) return notesUnauthorized(c);
      const now = Date.now();
      const { ticket, hash } = await newTicket();
      // Stored only while the session is live; a place at the hub only for a stored ticket.
      if (!(await issueTicket(db, caller, hash, now))) return notesUnauthorized(c);
      if (!(await hubOf(c.env, caller.userId).reserve(hash, now + TICKET_TTL_MS, c.var.config.liveSocketsPerAccount)))
        return tooManySockets(c);
      return c.json({ ticket, expires_in: TICKET_TTL_MS / SECOND } satisfies LiveTicketJson, 201);
    },
  )
  .get(
    "/live",
    socketOperation,
    privateNotesOnly,
    noStore(),
    upgradeOnly,
    allowedOriginOnly,
    queryParams(LiveQuery),
    async (c) => {
      const { ticket } = c.req.valid("query");
      const hash = TICKET_FORMAT.test(ticket) ? await hashOf(ticket) : undefined;
      // The ticket is used up here, by one statement, before anything else happens to the request.
      const claimed = hash === undefined ? undefined : await claimTicket(c.var.db, hash, Date.now());
      if (!claimed || hash === undefined) return c.json({ error: LiveMessage.invalidTicket }, 401);
      const answer = await hubOf(c.env, claimed.userId).fetch(
        connectRequest(claimed, hash, c.var.config.liveSocketsPerAccount),
      );
      if (!answer.webSocket) return tooManySockets(c);
      // The hub's answer as one of ours, whose headers the app's middleware may still set.
      return new Response(null, { status: 101, webSocket: answer.webSocket });
    },
  );

// Any other method is a 405, as on every other path.
for (const [path, allow] of allowedMethods(liveApp.routes)) liveApp.all(path, methodNotAllowed(allow));
