import { Hono } from "hono";
import { badJson, describeRoute, text } from "../../lib/describe";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { requireAccessToken, unauthorized } from "../caller";
import { requestMailer, sendIdentityUnlinkedNotice } from "../core/mails";
import { credentialStepUp } from "../core/step-up";
import { AuthMessage } from "../messages";
import { bearer, credentialStepUpRefused, passwordChecked } from "../openapi";
import { CredentialStepUpBody } from "../requests";
import { providerParam } from "./common";
import { unlinkIdentity } from "./store";

/**
 * The caller's linked identities: GET /auth/me lists them; this unlinks one, with the step-up that removing a passkey
 * needs (a stolen access token alone removes no way in), and never the account's last way in (core/accounts.ts,
 * otherWayIn).
 */
export const identityRoutes = new Hono<AppEnv>().delete(
  "/identities/:provider",
  describeRoute({
    ...bearer,
    summary: "Unlink a sign-in provider",
    description:
      "Needs the password, and while two-factor authentication is on a `code` (a step-up, counted on the session like the others; an account " +
      "without a password needs a recent sign-in), as removing a passkey does. Removes the caller's identity of the provider: signing in with " +
      "it then makes or finds an account by its address again. Refused while it is the account's last way in (no password, no other identity, " +
      "no passkey). A notice is mailed. Sessions it opened go on.",
    parameters: [providerParam],
    requestExample: { password: "correct horse battery" },
    responses: {
      "204": { description: "Unlinked" },
      "400": text("Malformed fields", AuthMessage.passwordString, AuthMessage.codeString, ...badJson),
      ...passwordChecked,
      "401": credentialStepUpRefused,
      "404": text("No identity of this provider is linked to the account", AuthMessage.identityNotLinked),
      "409": text("The account's last way in", AuthMessage.lastWayIn),
    },
  }),
  requireAccessToken,
  jsonBody(CredentialStepUpBody),
  async (c) => {
    const { db, log, caller } = c.var;
    const { password, code } = c.req.valid("json");
    const confirmed = await credentialStepUp(c, password, code);
    if ("refused" in confirmed) return confirmed.refused;
    const provider = c.req.param("provider");
    const outcome = await unlinkIdentity(db, c.var.audit, caller, provider, Date.now());
    if (outcome === "dead") return unauthorized(c);
    if (outcome === "absent") return c.text(AuthMessage.identityNotLinked, 404);
    if (outcome === "last") return c.text(AuthMessage.lastWayIn, 409);
    log.info("oauth_identity_unlinked", { userId: caller.userId, provider });
    await sendIdentityUnlinkedNotice(requestMailer(c, caller.userId), confirmed.account.email, provider);
    return c.body(null, 204);
  },
);
