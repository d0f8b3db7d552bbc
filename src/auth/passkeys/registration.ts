import { Hono } from "hono";
import { badJson, describeRoute, json, ref, text } from "../../lib/describe";
import { MINUTE } from "../../lib/units";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { requireAccessToken, unauthorized } from "../caller";
import { mailerOf, sendPasskeyAddedNotice } from "../core/mails";
import { AuthMessage } from "../messages";
import { bearer, bearerErrors, passwordChecked } from "../openapi";
import { PasskeyRegisterVerifyBody, PasskeyStepUpBody } from "./requests";
import { PASSKEY_REFUSALS } from "../shapes";
import { passkeyStepUp } from "./step-up";
import { passkeyJson, refusal, relyingParty, stepUpRefused, unavailable } from "./answers";
import { addPasskey, claimRegistrationChallenge, startRegistration } from "./store";
import { PASSKEY_ALGORITHM_NAMES, challengeOf, checkRegistration, creationOptions, randomBase64url } from "./webauthn";
import { MAX_PASSKEYS, PASSKEY_CHALLENGE_TTL_MS } from "../policy";

/** The name of a passkey registered without one. */
const DEFAULT_PASSKEY_NAME = "Passkey";

/**
 * Adding a passkey to the signed-in account: the options (after a step-up), then the new credential. See
 * docs/passkeys.md.
 */
export const passkeyRegistration = new Hono<AppEnv>()
  .post(
    "/passkeys/register/options",
    describeRoute({
      ...bearer,
      summary: "Start adding a passkey",
      description:
        "Needs the password, and while two-factor authentication is on a `code` (a step-up, counted on the session like the others; a missing " +
        "password is a 401 that is not counted). Answers the options for `navigator.credentials.create()` (WebAuthn Level 3 JSON): a " +
        `discoverable credential with user verification, no attestation, ${PASSKEY_ALGORITHM_NAMES}; the challenge is good for ${PASSKEY_CHALLENGE_TTL_MS / MINUTE} minutes, once.`,
      requestExample: { password: "correct horse battery" },
      responses: {
        "200": json(
          "The options: pass `options` to navigator.credentials.create() (PublicKeyCredential.parseCreationOptionsFromJSON)",
          ref("RegistrationOptions"),
        ),
        "400": text("Malformed fields", AuthMessage.passwordString, AuthMessage.codeString, ...badJson),
        ...passwordChecked,
        "401": { ...passwordChecked["401"], ...stepUpRefused },
        ...unavailable,
      },
    }),
    requireAccessToken,
    jsonBody(PasskeyStepUpBody),
    async (c) => {
      const { password, code } = c.req.valid("json");
      const rp = relyingParty(c.var);
      if (!rp) return c.text(AuthMessage.passkeysUnavailable, 503);
      const confirmed = await passkeyStepUp(c, password, code);
      if ("refused" in confirmed) return confirmed.refused;
      const { account } = confirmed;
      const challenge = randomBase64url();
      const registering = await startRegistration(c.var.db, account.id, challenge, Date.now());
      if (!registering) return unauthorized(c);
      const options = await creationOptions(
        rp,
        { ...registering, email: account.email },
        challenge,
        PASSKEY_CHALLENGE_TTL_MS,
      );
      return c.json({ options }, 200);
    },
  )

  .post(
    "/passkeys/register/verify",
    describeRoute({
      ...bearer,
      summary: "Finish adding a passkey",
      description:
        "The credential navigator.credentials.create() made with the options, as JSON (`credential.toJSON()`), and an optional name. The " +
        "options' challenge is used up by this request whatever its outcome. The origin must be one of WEBAUTHN_ORIGINS, the RP ID " +
        `WEBAUTHN_RP_ID, and the user verified. At most ${MAX_PASSKEYS} passkeys per account; a credential belongs to one account. A notice is mailed.`,
      requestExample: {
        response: {
          id: "…",
          rawId: "…",
          type: "public-key",
          response: { clientDataJSON: "…", attestationObject: "…", transports: ["internal"] },
        },
        name: "My phone",
      },
      responses: {
        "201": json("Added", ref("Passkey")),
        "400": {
          description: "Refused (JSON, with a reason for the app), or a malformed body (plain text)",
          content: {
            "application/json": {
              schema: ref("PasskeyRefusal"),
              examples: Object.fromEntries(PASSKEY_REFUSALS.map((reason) => [reason, { value: refusal(reason) }])),
            },
            "text/plain": {
              schema: {
                type: "string",
                enum: [
                  AuthMessage.passkeyResponseRequired,
                  AuthMessage.passkeyResponseInvalid,
                  AuthMessage.passkeyNameString,
                  AuthMessage.passkeyNameInvalid,
                  ...badJson,
                ],
              },
            },
          },
        },
        ...bearerErrors,
        "409": text(
          `Already registered (on any account), or the account has ${MAX_PASSKEYS} passkeys`,
          AuthMessage.passkeyAlreadyRegistered,
          AuthMessage.passkeyLimit,
        ),
        ...unavailable,
      },
    }),
    requireAccessToken,
    jsonBody(PasskeyRegisterVerifyBody),
    async (c) => {
      const { response, name = DEFAULT_PASSKEY_NAME } = c.req.valid("json");
      const { db, log, caller } = c.var;
      const rp = relyingParty(c.var);
      if (!rp) return c.text(AuthMessage.passkeysUnavailable, 503);
      const now = Date.now();
      const challenge = challengeOf(response.response.clientDataJSON);
      if (!challenge) return c.json(refusal("invalid_response"), 400);
      // Used up here, before anything is checked: a refused response needs new options.
      const claim = await claimRegistrationChallenge(db, caller, challenge, now);
      if (!claim.live) return unauthorized(c);
      if (!claim.claimed) return c.json(refusal("challenge"), 400);
      const checked = await checkRegistration(rp, response, challenge);
      if ("refused" in checked) {
        log.warn("passkey_registration_refused", {
          userId: caller.userId,
          reason: checked.refused,
          detail: checked.detail,
        });
        return c.json(refusal(checked.refused), 400);
      }
      const stored = await addPasskey(db, c.var.audit, caller, checked.credential, name, now);
      if ("refused" in stored) {
        if (stored.refused === "session") return unauthorized(c);
        return c.text(
          stored.refused === "taken" ? AuthMessage.passkeyAlreadyRegistered : AuthMessage.passkeyLimit,
          409,
        );
      }
      log.info("passkey_added", { userId: caller.userId, passkeyId: stored.added.id });
      await sendPasskeyAddedNotice(mailerOf(c.var), claim.email, name);
      return c.json(passkeyJson(stored.added), 201);
    },
  );
