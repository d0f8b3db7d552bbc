import { Hono } from "hono";
import type { AppEnv } from "../../types";
import { passkeyManagement } from "./manage";
import { passkeyRegistration } from "./registration";
import { passkeySignInRoutes } from "./sign-in";

/**
 * Passkeys (WebAuthn): add one to the signed-in account, sign in with one, list, rename and remove them.
 * The flows, the refusal rules and the decisions are in docs/passkeys.md; the native apps' documents are
 * served by well-known.ts, outside /auth.
 */
export const passkeyRoutes = new Hono<AppEnv>()
  .route("/", passkeyRegistration)
  .route("/", passkeySignInRoutes)
  .route("/", passkeyManagement);
