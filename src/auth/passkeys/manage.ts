import { Hono } from "hono";
import { badJson, describeRoute, json, ref, text } from "../../lib/describe";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { requireAccessToken, unauthorized } from "../caller";
import { mailerOf, sendPasskeyRemovedNotice } from "../core/mails";
import { AuthMessage } from "../messages";
import { bearer, bearerErrors, passwordChecked } from "../openapi";
import { PasskeyRenameBody, PasskeyStepUpBody } from "./requests";
import { passkeyStepUp } from "./step-up";
import { passkeyJson, stepUpRefused } from "./answers";
import { listPasskeys, removePasskey, renamePasskey } from "./store";

const idParameter = [
  {
    name: "id",
    in: "path",
    required: true,
    description: "A passkey's `id` from GET /auth/passkeys",
    schema: { type: "string" },
  },
];
const notFound = { "404": text("No such passkey of the caller's", AuthMessage.passkeyNotFound) };

/** The caller's passkeys: list, rename, remove. None of these needs WEBAUTHN_RP_ID, so an owner can always clean up. */
export const passkeyManagement = new Hono<AppEnv>()
  .get(
    "/passkeys",
    describeRoute({
      ...bearer,
      summary: "List your passkeys",
      description: "The caller's passkeys, oldest first.",
      responses: { "200": json("The passkeys", { type: "array", items: ref("Passkey") }), ...bearerErrors },
    }),
    requireAccessToken,
    async (c) => {
      const rows = await listPasskeys(c.var.db, c.var.caller, Date.now());
      if (!rows) return unauthorized(c);
      return c.json(rows.map(passkeyJson), 200);
    },
  )

  .patch(
    "/passkeys/:id",
    describeRoute({
      ...bearer,
      summary: "Rename a passkey",
      parameters: idParameter,
      requestExample: { name: "Work laptop" },
      responses: {
        "200": json("Renamed", ref("Passkey")),
        "400": text(
          "Missing or malformed name",
          AuthMessage.passkeyNameRequired,
          AuthMessage.passkeyNameString,
          AuthMessage.passkeyNameInvalid,
          ...badJson,
        ),
        ...notFound,
        ...bearerErrors,
      },
    }),
    requireAccessToken,
    jsonBody(PasskeyRenameBody),
    async (c) => {
      const { name } = c.req.valid("json");
      const { live, renamed } = await renamePasskey(c.var.db, c.var.caller, c.req.param("id"), name, Date.now());
      if (!live) return unauthorized(c);
      // Another account's passkey, or none: the same 404, so ids cannot be probed.
      return renamed ? c.json(passkeyJson(renamed), 200) : c.text(AuthMessage.passkeyNotFound, 404);
    },
  )

  .delete(
    "/passkeys/:id",
    describeRoute({
      ...bearer,
      summary: "Remove a passkey",
      description:
        "Needs the password, and while two-factor authentication is on a `code` (a step-up, counted on the session like the others). The passkey " +
        "no longer signs in; a notice is mailed. Sessions it opened go on (end them with DELETE /auth/sessions/{id}).",
      parameters: idParameter,
      requestExample: { password: "correct horse battery" },
      responses: {
        "204": { description: "Removed" },
        "400": text("Malformed fields", AuthMessage.passwordString, AuthMessage.codeString, ...badJson),
        ...passwordChecked,
        "401": { ...passwordChecked["401"], ...stepUpRefused },
        ...notFound,
      },
    }),
    requireAccessToken,
    jsonBody(PasskeyStepUpBody),
    async (c) => {
      const { password, code } = c.req.valid("json");
      const confirmed = await passkeyStepUp(c, password, code);
      if ("refused" in confirmed) return confirmed.refused;
      const name = await removePasskey(c.var.db, c.var.audit, c.var.caller, c.req.param("id"), Date.now());
      if (name === undefined) return c.text(AuthMessage.passkeyNotFound, 404);
      c.var.log.info("passkey_removed", { userId: c.var.caller.userId, passkeyId: c.req.param("id") });
      await sendPasskeyRemovedNotice(mailerOf(c.var), confirmed.account.email, name);
      return c.body(null, 204);
    },
  );
