import { Hono } from "hono";
import type { AppEnv } from "../../types";
import { identityRoutes } from "./unlink";
import { nativeFlow } from "./native";
import { tokenExchange } from "./token";
import { webFlow } from "./web";

/** Social sign-in (docs/social-sign-in.md): the web flow, its login code's exchange, the native flow, and unlinking. */
export const oauthRoutes = new Hono<AppEnv>()
  .route("/", webFlow)
  .route("/", tokenExchange)
  .route("/", nativeFlow)
  .route("/", identityRoutes);
