import * as v from "valibot";
import { body, requiredString } from "../../lib/validation";
import { AuthMessage } from "../messages";
import { stepUpCode } from "../requests";
import { AuthenticationResponse, RegistrationResponse } from "./credential-json";
import { duration } from "../../lib/units";
import { MAX_PASSKEY_NAME_CHARS, RECENT_SIGN_IN_MS } from "../policy";

/** The request bodies of the passkey endpoints (the area's other bodies are in auth/requests.ts). */

/**
 * A passkey step-up's password: its absence is a 401 (the handler's), like a wrong one but not counted; a
 * value of another type is a 400.
 */
const passkeyStepUpPassword = v.optional(
  v.pipe(
    v.string(AuthMessage.passwordString),
    v.description(
      `The account's password (step-up); an account without one (\`has_password\` false) leaves it out and needs a session opened in the last ${duration(RECENT_SIGN_IN_MS)}.`,
    ),
  ),
);

/** A passkey's name: trimmed, 1 to MAX_PASSKEY_NAME_CHARS characters, none of them control or invisible formatting characters. */
const passkeyName = v.pipe(
  requiredString(AuthMessage.passkeyNameRequired, AuthMessage.passkeyNameString),
  v.transform((name) => name.trim()),
  v.check((name) => [...name].length <= MAX_PASSKEY_NAME_CHARS && !/\p{C}/u.test(name), AuthMessage.passkeyNameInvalid),
  v.description(`1 to ${MAX_PASSKEY_NAME_CHARS} characters, trimmed; no control characters.`),
);

export const PasskeyStepUpBody = body({ password: passkeyStepUpPassword, code: stepUpCode });

export const PasskeyRegisterVerifyBody = body({ response: RegistrationResponse, name: v.optional(passkeyName) });

export const PasskeyRenameBody = body({ name: passkeyName });

/** POST /auth/passkeys/login/options takes an empty object: the user is found by the passkey they pick. */
export const PasskeyLoginOptionsBody = body({});

export const PasskeyLoginVerifyBody = body({
  response: AuthenticationResponse,
  // As in LoginBody: a value that is not one of our tokens counts for nothing.
  device_token: v.fallback(
    v.optional(
      v.pipe(
        v.string(),
        v.description("The `device_token` of an earlier sign-in from this device: renewed, not replaced."),
      ),
    ),
    undefined,
  ),
});
