import type { Context } from "hono";
import type { CallerEnv } from "../caller";
import { AuthMessage } from "../messages";
import { reauthenticate } from "../core/step-up";

/**
 * The step-up of adding or removing a passkey: the password (plus the code with TOTP), as the other
 * step-ups, except that a missing password is a 401 (the passkey interface), not counted; a wrong one is
 * counted. An account without a password proves itself with a recent session, as everywhere.
 */
export function passkeyStepUp(c: Context<CallerEnv>, password: string | undefined, code: string | undefined) {
  return reauthenticate(c, {
    password: {
      value: password === "" ? undefined : password,
      missing: AuthMessage.passwordRequired,
      missingStatus: 401,
    },
    code: { value: code },
  });
}
