import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../types";
import { clientKeys } from "./client-key";
import { errorResponse, setRetryAfter } from "./http";
import { MINUTE } from "./units";

/** The limits every request of an area passes before its handler: the per-client rate and the body size. */

/** The period of every per-client limiter in wrangler.toml. */
const CLIENT_LIMIT_PERIOD_MS = MINUTE;

/**
 * The two Cloudflare Rate Limiting bindings of a per-client limit: `client` counts each client (an IPv4
 * address, an IPv6 /64), `network` each IPv6 /48, with a higher limit, so that one holder of a /48 cannot
 * act as its 65,536 /64s.
 */
export interface ClientLimiters {
  client: RateLimit;
  network: RateLimit;
}

/** Which limit refuses the request, if one does: the client's first, then (only when it passed) the /48's. */
async function refusedBy(
  limiters: ClientLimiters,
  keys: ReturnType<typeof clientKeys>,
): Promise<"client" | "network" | undefined> {
  if (!(await limiters.client.limit({ key: keys.client })).success) return "client";
  if (keys.network !== undefined && !(await limiters.network.limit({ key: keys.network })).success) return "network";
  return undefined;
}

/**
 * Per-client limit on requests of the given methods, keyed by the client (clientKeys). A request its
 * client's limit lets through is counted against its /48's as well (IPv6 only); one the client's limit
 * refuses is not, so that one /64 over its limit does not use up its neighbours' share. RATE_LIMITS=off
 * skips it (load tests only).
 */
export function clientRateLimit(
  limiters: (env: AppEnv["Bindings"]) => ClientLimiters,
  methods: readonly string[],
  message: string,
): MiddlewareHandler<AppEnv> {
  return createMiddleware<AppEnv>(async (c, next) => {
    if (!c.get("config").clientRateLimits || !methods.includes(c.req.method)) return next();
    const by = await refusedBy(limiters(c.env), clientKeys(c));
    if (by) {
      c.var.log.warn("client_rate_limited", { by });
      setRetryAfter(c, CLIENT_LIMIT_PERIOD_MS);
      return errorResponse(c, 429, message);
    }
    await next();
  });
}

/**
 * Counts one request against the client's limit (clientRateLimit's bindings) outside that middleware, for requests
 * counted only when they fail (a wrong admin token): true when the limit refuses it. Never with RATE_LIMITS=off.
 */
export async function overClientLimit(c: Context<AppEnv>, limiters: ClientLimiters): Promise<boolean> {
  if (!c.var.config.clientRateLimits) return false;
  const by = await refusedBy(limiters, clientKeys(c));
  if (by) c.var.log.warn("client_rate_limited", { by });
  return by !== undefined;
}

/** Refuses bodies over `maxBytes` with a 413 in the area's format, before anything reads them. */
export function limitBody(maxBytes: number, message: string): MiddlewareHandler<AppEnv> {
  return bodyLimit({ maxSize: maxBytes, onError: (c: Context) => errorResponse(c, 413, message) });
}
