import { drizzle } from "drizzle-orm/d1";
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { requestId } from "hono/request-id";
import { secureHeaders } from "hono/secure-headers";
import { AuthMessage } from "./auth/messages";
import { auth } from "./auth/routes";
import { readConfig } from "./config";
import { docs } from "./docs/routes";
import * as schema from "./db/schema";
import { clientRateLimit, corsPolicy, limitBody } from "./lib/guards";
import { errorResponse, isAccountsPath } from "./lib/http";
import { createLogger, describeError } from "./lib/log";
import { NoteMessage } from "./notes/schemas";
import { notesApp } from "./notes/routes";
import type { AppEnv } from "./types";

const KiB = 1024;

const app = new Hono<AppEnv>()
  .use(requestId())
  .use(async (c, next) => {
    const log = createLogger({ requestId: c.var.requestId, method: c.req.method, path: c.req.path });
    c.set("log", log);
    const started = Date.now();
    c.set("config", readConfig(c.env));
    c.set("db", drizzle(c.env.DB, { schema }));
    await next();
    log.info("request", { status: c.res.status, durationMs: Date.now() - started });
  })
  .use(secureHeaders())
  .use(corsPolicy)
  .use("/auth/*", limitBody(16 * KiB, AuthMessage.bodyTooLarge))
  .on("POST", "/auth/*", clientRateLimit((env) => env.AUTH_RATE_LIMITER, AuthMessage.clientThrottled))
  // Notes content is unbounded by the spec; 1 MiB keeps a row well under D1's 2 MB limit.
  .use("/notes/*", limitBody(1024 * KiB, NoteMessage.bodyTooLarge))
  .on(["POST", "PATCH", "DELETE"], "/notes/*", clientRateLimit((env) => env.NOTES_RATE_LIMITER, NoteMessage.clientThrottled))
  .route("/auth", auth)
  .route("/notes", notesApp)
  .route("/", docs);

app.notFound((c) => errorResponse(c, 404, isAccountsPath(c.req.path) ? "Not found." : "Not found"));

// Client mistakes arrive as HTTPExceptions carrying the message to show; anything else is ours:
// a generic 500, and the details (never a stack trace, SQL or secret) in one log line.
app.onError((err, c) => {
  if (err instanceof HTTPException) return errorResponse(c, err.status, err.message);
  const log = c.var.log ?? createLogger({ requestId: c.var.requestId, method: c.req.method, path: c.req.path });
  log.error("unhandled_error", describeError(err));
  return errorResponse(c, 500, isAccountsPath(c.req.path) ? AuthMessage.internalError : NoteMessage.internalError);
});

export type AppType = typeof app;
export default app;
