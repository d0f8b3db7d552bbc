import { Hono } from "hono";
import { auditAdmin } from "./audit/routes";
import { webhooksAdmin } from "./audit/webhooks/routes";
import { ADMIN_BODY_LIMIT_BYTES, adminGate, AdminMessage, adminMethodNotAllowed } from "./lib/admin";
import { allowedMethods } from "./lib/http";
import { limitBody } from "./lib/request-limits";
import type { AppEnv } from "./types";

/**
 * The admin API, mounted at /admin by index.ts: the door (ADMIN_TOKEN, lib/admin.ts) before everything, then each
 * area's admin routes: the accounts' (`users`, handed in by index.ts with the accounts area's seams), the audit
 * log's and the webhooks'. Its own tag in /openapi.json. See docs/operations.md, "Admin API".
 */
export function adminArea<U extends Hono<AppEnv>>(users: U) {
  const admin = new Hono<AppEnv>()
    .use(...adminGate)
    .use(limitBody(ADMIN_BODY_LIMIT_BYTES, AdminMessage.bodyTooLarge))
    .route("/", users)
    .route("/", auditAdmin)
    .route("/", webhooksAdmin);
  // Any other method on these paths is a JSON 405; outside the chain, so the app type lists only what exists.
  for (const [path, allow] of allowedMethods(admin.routes)) admin.all(path, adminMethodNotAllowed(allow));
  return admin;
}
