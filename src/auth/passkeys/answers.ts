import type { Config, WebAuthnConfig } from "../../config";
import { text } from "../../lib/describe";
import type { Logger } from "../../lib/log";
import { AuthMessage } from "../messages";
import type { PasskeyJson, PasskeyRefusalJson, PasskeyRefusalReason } from "../shapes";
import type { PasskeyRow } from "./store";

/** What the passkey routes answer, written once: a passkey as JSON, a refused registration, the relying party. */

export function passkeyJson(row: PasskeyRow): PasskeyJson {
  return {
    id: row.id,
    name: row.name,
    created_at: new Date(row.createdAt).toISOString(),
    last_used_at: row.lastUsedAt === null ? null : new Date(row.lastUsedAt).toISOString(),
    backed_up: row.backedUp,
    counter_regressed_at: row.counterRegressedAt === null ? null : new Date(row.counterRegressedAt).toISOString(),
  };
}

const REFUSAL_MESSAGES: Record<PasskeyRefusalReason, string> = {
  challenge: AuthMessage.passkeyChallengeRefused,
  origin: AuthMessage.passkeyOriginRefused,
  rp_id: AuthMessage.passkeyRpIdRefused,
  user_verification: AuthMessage.passkeyUserNotVerified,
  invalid_response: AuthMessage.passkeyResponseRefused,
};

/** The 400 of a refused registration: what went wrong for a person, and its reason for the app. */
export function refusal(reason: PasskeyRefusalReason): PasskeyRefusalJson {
  return { error: REFUSAL_MESSAGES[reason], reason };
}

/**
 * The relying party a ceremony (options or verify) works for, or undefined while WEBAUTHN_RP_ID is unset or
 * a setting of its group is unusable: the handler answers 503 then, and the log names the problem. Listing,
 * renaming and deleting passkeys need no relying party and work regardless.
 */
export function relyingParty({ config, log }: { config: Config; log: Logger }): WebAuthnConfig | undefined {
  if (!("problem" in config.webauthn)) return config.webauthn;
  log.warn("passkeys_unavailable", { problem: config.webauthn.problem });
  return undefined;
}

/** The 503 of a ceremony while passkeys are not configured. */
export const unavailable = {
  "503": text("Passkeys are not configured on this server (WEBAUTHN_RP_ID)", AuthMessage.passkeysUnavailable),
};
