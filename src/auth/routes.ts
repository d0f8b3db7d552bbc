import { Hono } from "hono";
import { methodNotAllowed } from "../lib/http";
import type { AppEnv } from "../types";
import { login } from "./login";
import { registration } from "./registration";

/** The accounts area: one sub-app per flow, mounted at /auth. */
export const auth = new Hono<AppEnv>().route("/", registration).route("/", login);

// Any other method on these paths is a 405. Registered outside the chain above, so that the exported app
// type (and with it the typed client) lists only the methods that exist.
for (const path of ["/register", "/resend-verification", "/verify-email", "/login"]) {
  auth.all(path, methodNotAllowed("POST"));
}
