import { Hono, type Context } from "hono";
import { badJson, describeRoute, json, ref, text } from "../../lib/describe";
import { MINUTE } from "../../lib/units";
import type { WebAuthnConfig } from "../../config";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { AuthMessage } from "../messages";
import { accountErrors, accountsTag, suspendedAnswer } from "../openapi";
import { PasskeyLoginOptionsBody, PasskeyLoginVerifyBody } from "./requests";
import { readDeviceToken } from "../core/devices";
import { jwtSecretOf } from "../caller";
import { recordFailedSignIn, signIn, type CompleteProof } from "../core/gate";
import { relyingParty, unavailable } from "./answers";
import type { AuthenticationResponseInput } from "./credential-json";
import { claimSignIn, recordSignIn, storeSignInChallenge } from "./store";
import { challengeOf, checkAssertion, randomBase64url, requestOptions } from "./webauthn";
import { PASSKEY_CHALLENGE_TTL_MS } from "../policy";

/**
 * Signing in with a passkey, through the gate like every sign-in. One answer for every refusal (401
 * `Invalid passkey.`), so nothing tells which part was wrong; the log says. The address's password lock
 * plays no part: a passkey cannot be guessed, and whoever locks the address must not lock its owner out.
 */
async function passkeySignIn(
  c: Context<AppEnv>,
  rp: WebAuthnConfig,
  response: AuthenticationResponseInput,
  deviceToken: string | undefined,
) {
  const { db, log } = c.var;
  const now = Date.now();
  const refuse = (why: string, userId?: number) => {
    log.warn("passkey_sign_in_refused", { why, ...(userId !== undefined && { userId }) });
    if (userId !== undefined) recordFailedSignIn(c, userId, { reason: "passkey" });
    return c.text(AuthMessage.invalidPasskey, 401);
  };
  const challenge = challengeOf(response.response.clientDataJSON);
  if (!challenge) return refuse("no client data");
  // The challenge is used up first, by one write, whatever follows: one assertion, one try.
  const { claimed, passkey } = await claimSignIn(db, challenge, response.id, now);
  if (!claimed) return refuse("challenge unknown, used, expired or not a sign-in's");
  if (!passkey) return refuse("unknown credential");
  const { userHandle } = response.response;
  if (userHandle && userHandle !== passkey.handle) return refuse("user handle of another account", passkey.userId);
  const asserted = await checkAssertion(rp, response, challenge, passkey);
  if ("refused" in asserted) return refuse(asserted.refused, passkey.userId);
  if (!(await recordSignIn(db, passkey.id, asserted, now)))
    return refuse("counter did not move forward", passkey.userId);

  const account = { id: passkey.userId, email: passkey.email, signInEpoch: passkey.signInEpoch };
  const deviceId = (await readDeviceToken(deviceToken, account, jwtSecretOf(c), now))?.id;
  // User verification makes a passkey two factors (what the user has, and their fingerprint, face or PIN):
  // nothing is due, so the gate opens the session at once (as after a second factor), and the
  // typed client sees a login's answer only.
  const proof: CompleteProof = {
    account,
    amr: [asserted.deviceBound ? "hwk" : "swk", "mfa"],
    deviceId,
    factorDue: false,
  };
  log.info("passkey_sign_in", { userId: passkey.userId, passkeyId: passkey.id });
  return signIn(c, proof);
}

/** Signing in with a passkey: the options (anyone may ask), then the assertion. See docs/passkeys.md. */
export const passkeySignInRoutes = new Hono<AppEnv>()
  .post(
    "/passkeys/login/options",
    describeRoute({
      tags: accountsTag,
      summary: "Start signing in with a passkey",
      description:
        "No token and no address: answers the options for `navigator.credentials.get()` (WebAuthn Level 3 JSON) without `allowCredentials`, so the " +
        `device offers the passkeys it holds for this site and the user picks one. The challenge is good for ${PASSKEY_CHALLENGE_TTL_MS / MINUTE} minutes, once.`,
      requestExample: {},
      responses: {
        "200": json(
          "The options: pass `options` to navigator.credentials.get() (PublicKeyCredential.parseRequestOptionsFromJSON)",
          ref("SignInOptions"),
        ),
        "400": text("Not a JSON object", ...badJson),
        ...accountErrors,
        ...unavailable,
      },
    }),
    jsonBody(PasskeyLoginOptionsBody),
    async (c) => {
      const rp = relyingParty(c.var);
      if (!rp) return c.text(AuthMessage.passkeysUnavailable, 503);
      const challenge = randomBase64url();
      await storeSignInChallenge(c.var.db, challenge, Date.now());
      return c.json({ options: await requestOptions(rp, challenge, PASSKEY_CHALLENGE_TTL_MS) }, 200);
    },
  )

  .post(
    "/passkeys/login/verify",
    describeRoute({
      tags: accountsTag,
      summary: "Sign in with a passkey",
      description:
        "The assertion navigator.credentials.get() made with the options, as JSON (`credential.toJSON()`). Answers exactly like a login; the " +
        "session's `amr` is `hwk` (a device-bound passkey) or `swk` (a synced one) with `mfa`: user verification makes it two factors, so no " +
        "TOTP code is asked. The options' challenge is used up by this request whatever its outcome. The address's password lock does not apply.",
      requestExample: {
        response: {
          id: "…",
          rawId: "…",
          type: "public-key",
          response: { clientDataJSON: "…", authenticatorData: "…", signature: "…", userHandle: "…" },
        },
      },
      responses: {
        "200": json("Signed in", ref("Login")),
        "400": text(
          "Malformed body",
          AuthMessage.passkeyResponseRequired,
          AuthMessage.passkeyResponseInvalid,
          ...badJson,
        ),
        "403": suspendedAnswer,
        "401": text(
          "An unknown passkey; a used, expired or registration challenge; another origin or RP ID; no user verification; a bad signature; " +
            "a counter that did not move forward (unless it stays 0); a userHandle of another account",
          AuthMessage.invalidPasskey,
        ),
        ...accountErrors,
        ...unavailable,
      },
    }),
    jsonBody(PasskeyLoginVerifyBody),
    async (c) => {
      const { response, device_token: deviceToken } = c.req.valid("json");
      const rp = relyingParty(c.var);
      if (!rp) return c.text(AuthMessage.passkeysUnavailable, 503);
      return passkeySignIn(c, rp, response, deviceToken);
    },
  );
