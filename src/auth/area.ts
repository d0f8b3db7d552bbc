import { Hono, type MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { allowedMethods, methodNotAllowed } from "../lib/http";
import { clientRateLimit, limitBody } from "../lib/request-limits";
import { noStore } from "../lib/security-headers";
import type { AppEnv, Bindings } from "../types";
import { accountDeletion, accountRoutes } from "./account/routes";
import { adminUsers } from "./admin/routes";
import { emailRevert } from "./account/email-revert";
import type { OwnedElsewhere } from "./core/accounts";
import { AuthMessage } from "./messages";
import { mfaRoutes } from "./mfa/routes";
import { passkeyRoutes } from "./passkeys/routes";
import { oauthRoutes } from "./oauth/routes";
import { recovery } from "./recovery/routes";
import { registration } from "./registration/routes";
import { sessionRoutes } from "./session/routes";
import { AUTH_BODY_LIMIT_BYTES } from "./policy";

/**
 * Told that some sessions of account `userId` have ended, after the write that ended them committed: what
 * holds on to sessions beyond one request (the live sockets, src/live/) re-reads which are still live.
 */
export type SessionsEnded = (env: Bindings, userId: number) => Promise<void>;

/**
 * What the accounts area is handed at wiring time (index.ts): what other areas keep for an account, who hears that
 * sessions ended, and the audit log's writer (it sets `c.var.audit` for each request).
 */
export interface AuthSeams {
  ownedElsewhere: OwnedElsewhere;
  sessionsEnded: SessionsEnded;
  audit: MiddlewareHandler<AppEnv>;
}

/**
 * The one door that ends sessions (core/sessions.ts, endSessions) calls `c.var.sessionsEnded(userId)` once its write
 * has committed; the listener runs after the answer (waitUntil).
 */
function tellingSessionsEnded(sessionsEnded: SessionsEnded): MiddlewareHandler<AppEnv> {
  return createMiddleware<AppEnv>(async (c, next) => {
    c.set("sessionsEnded", (userId) => c.executionCtx.waitUntil(sessionsEnded(c.env, userId)));
    await next();
  });
}

/**
 * The accounts area: one sub-app per capability, mounted at /auth, behind its body limit and per-client
 * limit. Its answers carry tokens or personal data, or say whether an address has an account: none is cached.
 */
export function authArea({ ownedElsewhere, sessionsEnded, audit }: AuthSeams) {
  const auth = new Hono<AppEnv>()
    .use(noStore())
    .use(tellingSessionsEnded(sessionsEnded))
    .use(audit)
    .use(limitBody(AUTH_BODY_LIMIT_BYTES, AuthMessage.bodyTooLarge))
    .use(
      clientRateLimit(
        (env) => ({ client: env.AUTH_RATE_LIMITER, network: env.AUTH_RATE_LIMITER_IPV6_48 }),
        ["POST"],
        AuthMessage.clientThrottled,
      ),
    )
    .route("/", registration)
    .route("/", sessionRoutes)
    .route("/", recovery)
    .route("/", accountRoutes)
    .route("/", accountDeletion(ownedElsewhere))
    .route("/", emailRevert)
    .route("/", mfaRoutes)
    .route("/", passkeyRoutes)
    .route("/", oauthRoutes);

  // Any other method on these paths is a 405. Registered outside the chain above, so that the exported app
  // type (and with it the typed client) lists only the methods that exist.
  for (const [path, allow] of allowedMethods(auth.routes)) auth.all(path, methodNotAllowed(allow));
  return auth;
}

/**
 * The admin API's accounts (/admin/users), which index.ts mounts at /admin behind the admin token (lib/admin.ts), with
 * the same seams: sessions a ban or a sign-out ends are told to the live sockets; its events are the admin's.
 */
export function authAdmin({ ownedElsewhere, sessionsEnded, audit }: AuthSeams) {
  return new Hono<AppEnv>().use(tellingSessionsEnded(sessionsEnded)).use(audit).route("/", adminUsers(ownedElsewhere));
}
