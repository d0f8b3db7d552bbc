import type { Context, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../types";
import { sha256 } from "./crypto";
import { json, throttled, type Json } from "./describe";
import { setRetryAfter } from "./http";
import { overClientLimit } from "./request-limits";
import { noStore } from "./security-headers";
import { KiB, MINUTE } from "./units";

/**
 * The admin API's door (every /admin/* route, mounted by index.ts): ADMIN_TOKEN as a Bearer token, compared in
 * constant time. Unset, every /admin/* path is a 404, as an unknown path is; a wrong token is a 401, counted against
 * the client's per-client limit (AUTH_RATE_LIMITER). The admin token is nothing else: no user token opens this door,
 * and this token opens no other (user tokens are JWTs checked against sessions). Every answer is JSON, not stored.
 * See docs/operations.md, "Admin API".
 */

/** An admin request's body is a few short fields (a ban's reason at most 500 characters). */
export const ADMIN_BODY_LIMIT_BYTES = 16 * KiB;

export const AdminMessage = {
  notFound: "Not found",
  unauthorized: "Missing or invalid admin token.",
  throttled: "Too many requests. Please slow down.",
  unavailable: "The admin API is not available: its ADMIN_TOKEN setting is unusable.",
  methodNotAllowed: "Method not allowed",
  invalidUserId: "User id must be a positive integer.",
  userNotFound: "User not found.",
  webhookNotFound: "No failed webhook delivery has this id.",
  internalError: "Internal server error",
  bodyTooLarge: `Request body is too large (limit ${ADMIN_BODY_LIMIT_BYTES / KiB} KiB).`,
} as const;

/** An admin answer's error: JSON `{"error": …}`, typed for the client. */
export function adminError<const M extends string, const S extends 400 | 401 | 404 | 405 | 429 | 503>(
  c: Context,
  status: S,
  message: M,
) {
  return c.json({ error: message }, status);
}

/** A token presented as `Authorization: Bearer <token>`. */
function presented(header: string | undefined): string | undefined {
  return /^Bearer +(\S+)$/i.exec(header ?? "")?.[1];
}

/** Whether two secrets are equal, in constant time: their SHA-256 digests are compared, whatever their lengths. */
async function sameSecret(given: string, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all([sha256(given), sha256(expected)]);
  return crypto.subtle.timingSafeEqual(a, b);
}

const checkToken = createMiddleware<AppEnv>(async (c, next) => {
  const token = c.var.config.adminToken;
  if (token === undefined) return adminError(c, 404, AdminMessage.notFound);
  if (typeof token !== "string") {
    c.var.log.error("admin_unavailable", { problem: token.problem });
    return adminError(c, 503, AdminMessage.unavailable);
  }
  const given = presented(c.req.header("Authorization"));
  if (given === undefined || !(await sameSecret(given, token))) {
    c.var.log.warn("admin_token_refused", { presented: given !== undefined });
    if (await overClientLimit(c, { client: c.env.AUTH_RATE_LIMITER, network: c.env.AUTH_RATE_LIMITER_IPV6_48 })) {
      setRetryAfter(c, MINUTE);
      return adminError(c, 429, AdminMessage.throttled);
    }
    c.header("WWW-Authenticate", 'Bearer realm="admin"');
    return adminError(c, 401, AdminMessage.unauthorized);
  }
  await next();
});

/** The door, and `Cache-Control: no-store` on every answer behind it (404s included). */
export const adminGate: MiddlewareHandler<AppEnv>[] = [noStore(), checkToken];

/** A JSON 405 of the admin API, with `Allow`. */
export function adminMethodNotAllowed(allow: string) {
  return (c: Context) => c.json({ error: AdminMessage.methodNotAllowed }, 405, { Allow: allow });
}

// The OpenAPI fragments every admin route shares.

export const adminTag = ["admin"];

/** `security` of every admin route: the admin token (a scheme of its own, not a user's bearer token). */
export const adminOperation = { tags: adminTag, security: [{ admin: [] }] };

const errorSchema = { $ref: "#/components/schemas/Error" };

/** A JSON error answer of the admin API. */
export function adminErrorAnswer(description: string, ...messages: string[]): Json {
  const examples = Object.fromEntries(messages.map((error, i) => [`e${i}`, { value: { error } }]));
  return { description, content: { "application/json": { schema: errorSchema, examples } } };
}

/** The answers every admin route may give. */
export const adminErrors: Record<string, Json> = {
  "401": {
    ...adminErrorAnswer("Missing or wrong admin token", AdminMessage.unauthorized),
    headers: { "WWW-Authenticate": { description: '`Bearer realm="admin"`', schema: { type: "string" } } },
  },
  "404": adminErrorAnswer("ADMIN_TOKEN is not set (every /admin path is then a 404)", AdminMessage.notFound),
  "413": adminErrorAnswer(`Body over ${ADMIN_BODY_LIMIT_BYTES / KiB} KiB`, AdminMessage.bodyTooLarge),
  "429": throttled(adminErrorAnswer("Too many wrong admin tokens from this client", AdminMessage.throttled)),
  "500": adminErrorAnswer("Unexpected failure", AdminMessage.internalError),
  "503": adminErrorAnswer("ADMIN_TOKEN is set but unusable (shorter than 32 characters)", AdminMessage.unavailable),
};

/** A JSON answer of the admin API. */
export const adminJson = (description: string, schema: Json) => json(description, schema);
