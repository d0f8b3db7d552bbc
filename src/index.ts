import { drizzle } from "drizzle-orm/d1";
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { requestId } from "hono/request-id";
import { auth } from "./auth/routes";
import { AuthMessage } from "./auth/messages";
import { readConfig } from "./config";
import * as schema from "./db/schema";
import { errorResponse, isAccountsPath } from "./lib/http";
import { createLogger, describeError } from "./lib/log";
import { NoteMessage } from "./notes/input";
import { notesApp } from "./notes/routes";
import type { AppEnv } from "./types";

const app = new Hono<AppEnv>()
  .use(requestId())
  .use(async (c, next) => {
    c.set("log", createLogger({ requestId: c.var.requestId, method: c.req.method, path: c.req.path }));
    c.set("db", drizzle(c.env.DB, { schema }));
    c.set("config", readConfig(c.env));
    await next();
  })
  .route("/auth", auth)
  .route("/notes", notesApp);

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
