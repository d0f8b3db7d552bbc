import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../types";
import { errorResponse, setRetryAfter } from "./http";
import { MINUTE } from "./units";

/** The period of both per-client limiters in wrangler.toml. */
const CLIENT_LIMIT_PERIOD_MS = MINUTE;

/**
 * Per-client limit through a Cloudflare Rate Limiting binding on requests of the given methods, keyed by
 * the client's IP address. RATE_LIMITS=off skips it (load tests only).
 */
export function clientRateLimit(
  limiter: (env: AppEnv["Bindings"]) => RateLimit,
  methods: readonly string[],
  message: string,
): MiddlewareHandler<AppEnv> {
  return createMiddleware<AppEnv>(async (c, next) => {
    if (!c.var.config.clientRateLimits || !methods.includes(c.req.method)) return next();
    const key = c.req.header("CF-Connecting-IP") ?? "unknown";
    const { success } = await limiter(c.env).limit({ key });
    if (!success) {
      c.var.log.warn("client_rate_limited");
      setRetryAfter(c, CLIENT_LIMIT_PERIOD_MS);
      return errorResponse(c, 429, message);
    }
    await next();
  });
}

/** Refuses bodies over `maxBytes` with a 413 in the area's format, before anything reads them. */
export function limitBody(maxBytes: number, message: string): MiddlewareHandler<AppEnv> {
  return bodyLimit({ maxSize: maxBytes, onError: (c: Context) => errorResponse(c, 413, message) });
}

const corsForAllowedOrigins = cors({
  origin: (origin, c: Context<AppEnv>) => (c.var.config.corsOrigins.includes(origin) ? origin : null),
  allowMethods: ["GET", "POST", "PATCH", "DELETE"],
  allowHeaders: ["Authorization", "Content-Type", "X-D1-Bookmark", "Idempotency-Key"],
  exposeHeaders: ["Retry-After", "X-Request-Id", "X-D1-Bookmark", "Idempotent-Replayed"],
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
