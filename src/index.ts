import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { requestId } from "hono/request-id";
import { AuthMessage } from "./auth/messages";
import { wellKnown } from "./auth/passkeys/well-known";
import { adminArea } from "./admin";
import { authAdmin, authArea } from "./auth/area";
import { auditTrail } from "./audit/requests";
import { activityRoutes } from "./audit/routes";
import { deliverBatch } from "./audit/webhooks/deliver";
import { readConfig, type Config } from "./config";
import { BOOKMARK_HEADER, databaseOf, isBookmark, requestSession, trackedClient } from "./db/client";
import type { RegisteredRoute } from "./openapi/document";
import { docsRoutes } from "./openapi/routes";
import { corsPolicy } from "./lib/cors";
import { securityHeaders } from "./lib/security-headers";
import { errorResponse, isAccountsPath, setAnswerHeader } from "./lib/http";
import { createLogger, describeError } from "./lib/log";
import { liveApp } from "./live/routes";
import { notesWatchers, sessionsEnded } from "./live/notify";
import { NoteMessage } from "./notes/messages";
import { attachmentLinks } from "./notes/attachments/link-routes";
import { LINK_PATH } from "./notes/attachments/links";
import { changesApp } from "./notes/changes";
import { accountNotesDeletion } from "./notes/lifecycle";
import { notesArea } from "./notes/area";
import { loggedPath, SHARED_PATH, sharedLinks } from "./notes/sharing/shared-routes";
import { mailNoteShared } from "./auth/core/mails";
import { cleanUp } from "./scheduled";
import type { AppEnv, Bindings } from "./types";

// The bindings object lives as long as the isolate: settings are read and checked once per isolate
// rather than once per request.
const configs = new WeakMap<Bindings, Config>();

function configFor(env: Bindings): Config {
  let config = configs.get(env);
  if (!config) configs.set(env, (config = readConfig(env)));
  return config;
}

/** What the accounts area is handed (docs/design.md, "Seams"), for its own routes and its admin routes alike. */
const authSeams = { ownedElsewhere: accountNotesDeletion, sessionsEnded };

const app = new Hono<AppEnv>()
  .use(requestId())
  .use(async (c, next) => {
    // A public link's token is a secret: its path is logged without it.
    const log = createLogger({ requestId: c.var.requestId, method: c.req.method, path: loggedPath(c.req.path) });
    c.set("log", log);
    const started = Date.now();
    const config = configFor(c.env);
    c.set("config", config);
    await next();
    // Workers Logs records every invocation itself; our line adds the request id, and is written for the
    // answers worth reading (or for all with LOG_REQUESTS=all): a line costs CPU and a logged event.
    if (c.res.status >= 400 || config.logRequests === "all")
      log.info("request", { status: c.res.status, durationMs: Date.now() - started });
  })
  .use(securityHeaders)
  .use(corsPolicy)
  // Each request reads and writes through a D1 session (read replication, see db/client.ts), and every
  // answer carries the session's bookmark for the client to send back on its next request.
  .use(async (c, next) => {
    const bookmark = c.req.header(BOOKMARK_HEADER);
    if (bookmark !== undefined && !isBookmark(bookmark)) {
      return errorResponse(
        c,
        400,
        isAccountsPath(c.req.path) ? AuthMessage.invalidBookmark : NoteMessage.invalidBookmark,
      );
    }
    const session = requestSession(c.env.DB, c.req.method, bookmark);
    const { client, asked } = trackedClient(session);
    c.set("db", databaseOf(client));
    c.set("bookmark", () => session.getBookmark());
    await next();
    // Only what the database reports, once asked: an answer that asked it nothing carries no bookmark,
    // rather than the client's own value handed back as if the database had vouched for it (docs/api.md).
    const latest = asked() ? session.getBookmark() : null;
    if (latest) setAnswerHeader(c, BOOKMARK_HEADER, latest);
  })
  // The areas meet here and in their declared seams only (docs/design.md, "Seams"): notes and live updates
  // take the caller's live session from auth/caller.ts; accounts are handed what an account owns in notes, to
  // delete with it, and who hears that sessions ended (the live sockets close theirs); notes are handed who
  // may be watching an account's notes (the live sockets pull after a write), and the accounts area's mail of a
  // new share (counted against the owner's and the deployment's budgets).
  .route("/auth", authArea({ ...authSeams, audit: auditTrail("user") }))
  // Each account's own audit events, an audit log route answering as the accounts area does (audit/routes.ts).
  .route("/auth", activityRoutes())
  // The admin API: the accounts' routes with the same seams (the events they record are the admin's), the audit
  // log's and the webhooks', behind ADMIN_TOKEN (admin.ts).
  .route("/admin", adminArea(authAdmin({ ...authSeams, audit: auditTrail("admin") })))
  .route("/notes", notesArea({ watchers: notesWatchers, shareMail: mailNoteShared }))
  // Live updates before the feed: the feed's middleware covers every path under /changes, and a route that
  // answers first ends the chain (live/routes.ts).
  .route("/changes", liveApp)
  .route("/changes", changesApp)
  // An attachment's signed link (notes/attachments/links.ts): the bytes without a token, for <img src>.
  .route(LINK_PATH, attachmentLinks)
  // A note's public link (notes/sharing/): its title and content, without an account.
  .route(SHARED_PATH, sharedLinks)
  // What native apps need to use this domain's passkeys, at the paths their platforms look for.
  .route("/.well-known", wellKnown)
  // The document lists every route registered here, read when it is first asked for.
  .route(
    "/",
    docsRoutes((): readonly RegisteredRoute[] => app.routes),
  );

app.notFound((c) => errorResponse(c, 404, isAccountsPath(c.req.path) ? "Not found." : "Not found"));

// Client mistakes arrive as HTTPExceptions carrying the message to show; anything else is ours:
// a generic 500, and the details (never a stack trace, SQL or secret) in one log line.
app.onError((err, c) => {
  if (err instanceof HTTPException) return errorResponse(c, err.status, err.message);
  const log =
    c.var.log ?? createLogger({ requestId: c.var.requestId, method: c.req.method, path: loggedPath(c.req.path) });
  log.error("unhandled_error", describeError(err));
  return errorResponse(c, 500, isAccountsPath(c.req.path) ? AuthMessage.internalError : NoteMessage.internalError);
});

export type AppType = typeof app;
export { app };
// The hub of each account's live sockets, a Durable Object class (wrangler.toml, `LIVE_HUB`).
export { LiveHub } from "./live/hub";

export default {
  fetch: app.fetch,
  async scheduled(_controller, env) {
    await cleanUp(env, databaseOf(env.DB), configFor(env), Date.now());
  },
  // The webhook queue's consumer (wrangler.toml, `[[queues.consumers]]`): delivers the events it is handed.
  async queue(batch, env) {
    const log = createLogger({ event_source: "queue", queue: batch.queue });
    await deliverBatch(
      { db: databaseOf(env.DB), webhooks: configFor(env).webhooks, queue: env.WEBHOOK_QUEUE, log },
      batch,
    );
  },
} satisfies ExportedHandler<Bindings>;
