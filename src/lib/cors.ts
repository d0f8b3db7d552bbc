import type { Context } from "hono";
import { cors } from "hono/cors";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../types";

const corsForAllowedOrigins = cors({
  origin: (origin, c: Context<AppEnv>) => (c.var.config.corsOrigins.includes(origin) ? origin : null),
  allowMethods: ["GET", "POST", "PATCH", "DELETE"],
  allowHeaders: [
    "Authorization",
    "Content-Type",
    "X-D1-Bookmark",
    "Idempotency-Key",
    "If-Match",
    "If-None-Match",
    // An attachment's download in parts (notes/attachments/).
    "Range",
    "If-Range",
  ],
  // Link pages the list and the search; WWW-Authenticate says which scheme a 401 wants; Location names a new
  // attachment, Content-Range the part of it answered, Content-Disposition its file name.
  exposeHeaders: [
    "Retry-After",
    "X-Request-Id",
    "X-D1-Bookmark",
    "Idempotent-Replayed",
    "Link",
    "WWW-Authenticate",
    "ETag",
    "Location",
    "Content-Range",
    "Content-Disposition",
  ],
  maxAge: 600,
});

/**
 * CORS for the origins in CORS_ORIGINS. Only browser requests (with an Origin) take part; an OPTIONS
 * that is not a preflight stays a plain request, which the spec answers with 405.
 */
export const corsPolicy = createMiddleware<AppEnv>(async (c, next) => {
  const isPreflight = c.req.method === "OPTIONS" && c.req.header("Access-Control-Request-Method") !== undefined;
  if (!c.req.header("Origin") || (c.req.method === "OPTIONS" && !isPreflight)) return next();
  return corsForAllowedOrigins(c, next);
});
