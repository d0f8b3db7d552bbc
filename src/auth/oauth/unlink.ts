import { Hono } from "hono";
import { describeRoute, text } from "../../lib/describe";
import type { AppEnv } from "../../types";
import { requireAccessToken, unauthorized } from "../caller";
import { AuthMessage } from "../messages";
import { bearer, bearerErrors } from "../openapi";
import { providerParam } from "./common";
import { unlinkIdentity } from "./store";

/**
 * The caller's linked identities: GET /auth/me lists them; this unlinks one, never the account's last way in
 * (store.otherWayIn).
 */
export const identityRoutes = new Hono<AppEnv>().delete(
  "/identities/:provider",
  describeRoute({
    ...bearer,
    summary: "Unlink a sign-in provider",
    description:
      "Removes the caller's identity of the provider: signing in with it then makes or finds an account by its address again. Refused while it is " +
      "the account's last way in (no password, no other identity). Sessions it opened go on.",
    parameters: [providerParam],
    responses: {
      "204": { description: "Unlinked" },
      "404": text("No identity of this provider is linked to the account", AuthMessage.identityNotLinked),
      "409": text("The account's last way in", AuthMessage.lastWayIn),
      ...bearerErrors,
    },
  }),
  requireAccessToken,
  async (c) => {
    const { db, log, caller } = c.var;
    const provider = c.req.param("provider");
    const outcome = await unlinkIdentity(db, c.var.audit, caller, provider, Date.now());
    if (outcome === "dead") return unauthorized(c);
    if (outcome === "absent") return c.text(AuthMessage.identityNotLinked, 404);
    if (outcome === "last") return c.text(AuthMessage.lastWayIn, 409);
    log.info("oauth_identity_unlinked", { userId: caller.userId, provider });
    return c.body(null, 204);
  },
);
