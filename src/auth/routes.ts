import { Hono } from "hono";
import { clientRateLimit, limitBody } from "../lib/request-limits";
import { noStore } from "../lib/security-headers";
import { allowedMethods, methodNotAllowed } from "../lib/http";
import type { AppEnv } from "../types";
import { account } from "./account";
import { emailRevert } from "./email-revert";
import { mfa } from "./mfa";
import { AUTH_BODY_LIMIT_BYTES } from "./limits";
import { AuthMessage } from "./messages";
import { recovery } from "./recovery";
import { registration } from "./registration";
import { sessionRoutes } from "./sessions";

/**
 * The accounts area: one sub-app per flow, mounted at /auth, behind its body limit and per-client limit.
 * Its answers carry tokens or personal data, or say whether an address has an account: none is cached.
 */
export const auth = new Hono<AppEnv>()
  .use(noStore())
  .use(limitBody(AUTH_BODY_LIMIT_BYTES, AuthMessage.bodyTooLarge))
  .use(clientRateLimit((env) => env.AUTH_RATE_LIMITER, ["POST"], AuthMessage.clientThrottled))
  .route("/", registration).route("/", sessionRoutes).route("/", recovery).route("/", account).route("/", emailRevert).route("/", mfa);

// Any other method on these paths is a 405. Registered outside the chain above, so that the exported app
// type (and with it the typed client) lists only the methods that exist.
for (const [path, allow] of allowedMethods(auth.routes)) auth.all(path, methodNotAllowed(allow));
