import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../types";
import { clientKey } from "./client-key";
import { errorResponse, setRetryAfter } from "./http";
import { MINUTE } from "./units";

/** The limits every request of an area passes before its handler: the per-client rate and the body size. */

/** The period of both per-client limiters in wrangler.toml. */
const CLIENT_LIMIT_PERIOD_MS = MINUTE;

/**
 * Per-client limit through a Cloudflare Rate Limiting binding on requests of the given methods, keyed by
 * the client (clientKey: an IPv4 address, or an IPv6 /64, the block one subscriber gets). RATE_LIMITS=off
 * skips it (load tests only).
 */
export function clientRateLimit(
  limiter: (env: AppEnv["Bindings"]) => RateLimit,
  methods: readonly string[],
  message: string,
): MiddlewareHandler<AppEnv> {
  return createMiddleware<AppEnv>(async (c, next) => {
    if (!c.get("config").clientRateLimits || !methods.includes(c.req.method)) return next();
    const key = clientKey(c);
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
