import * as v from "valibot";
import { ACCESS_TOKEN_TTL_SECONDS } from "../lib/access-token";
import { DAY, SECOND } from "../lib/units";
import {
  DEVICE_TOKEN_TTL_SECONDS,
  MFA_TOKEN_TRIES,
  MFA_TOKEN_TTL_MS,
  PASSKEY_CHALLENGE_BYTES,
  SESSION_ABSOLUTE_MS,
  SESSION_IDLE_MS,
  USER_AGENT_CHARS,
} from "./policy";

/**
 * The JSON answers of the accounts area, each defined once: the handlers' TypeScript types (and so the
 * typed client) and the schemas of /openapi.json both derive from these.
 */

const described = <S extends v.GenericSchema>(schema: S, description: string) =>
  v.pipe(schema, v.description(description));
const isoTime = (description: string) => v.pipe(v.string(), v.isoTimestamp(), v.description(description));

/** The answer of a refresh: a new pair of tokens. */
export const Tokens = v.object({
  token: described(
    v.string(),
    "Access token: HS256 JWT with claims id (the user id, a string), sid (the session), iat, exp = iat + " +
      ACCESS_TOKEN_TTL_SECONDS,
  ),
  refresh_token: described(
    v.string(),
    "Opaque; send to POST /auth/refresh for the next pair. Single use (see /auth/refresh).",
  ),
  expires_in: described(v.pipe(v.number(), v.integer()), `Seconds the access token lives: ${ACCESS_TOKEN_TTL_SECONDS}`),
});
export type TokensJson = v.InferOutput<typeof Tokens>;

/** The answer of a login: the tokens, and the device token for this device's next logins. */
export const Login = v.object({
  ...Tokens.entries,
  device_token: described(
    v.string(),
    `Opaque, good for ${(DEVICE_TOKEN_TTL_SECONDS * SECOND) / DAY} days or until the password changes: send it with this device's next logins ` +
      "(`device_token`), which are then judged on this device's own failed logins, not refused for the address's lock.",
  ),
});
export type LoginJson = v.InferOutput<typeof Login>;

/** One of the caller's sessions (devices). */
export const Session = v.object({
  id: v.string(),
  created_at: isoTime("The login"),
  last_used_at: isoTime("The last login or refresh"),
  expires_at: isoTime(
    `${SESSION_IDLE_MS / DAY} days after the last refresh, at most ${SESSION_ABSOLUTE_MS / DAY} days after the login`,
  ),
  user_agent: described(v.nullable(v.string()), `The User-Agent of the login, at most ${USER_AGENT_CHARS} characters`),
  amr: described(
    v.array(v.string()),
    "How the user signed in, as RFC 8176 values: `pwd` (password), `fed` (a sign-in provider), `otp` (a TOTP code), `rec` (a recovery code), `mfa` (two factors), " +
      "`hwk` (a device-bound passkey), `swk` (a synced passkey)",
  ),
  provider: described(
    v.nullable(v.string()),
    "The provider of a social sign-in (`google`, `apple`, `github`, …); null for the other ways in",
  ),
  current: described(v.boolean(), "True for the session of the token that asked"),
});
export type SessionJson = v.InferOutput<typeof Session>;

/** The answer of a login with the right password for an account with a second factor: no session yet. */
export const MfaChallenge = v.object({
  mfa_required: v.literal(true),
  mfa_token: described(
    v.string(),
    `Opaque: send it to POST /auth/mfa/verify with a code; ${MFA_TOKEN_TRIES} tries, single use`,
  ),
  expires_in: described(v.pipe(v.number(), v.integer()), `Seconds the mfa_token lives: ${MFA_TOKEN_TTL_MS / SECOND}`),
});
export type MfaChallengeJson = v.InferOutput<typeof MfaChallenge>;

/** One identity at a sign-in provider linked to the caller's account. */
export const Identity = v.object({
  provider: described(v.string(), "The provider's name, as in /auth/oauth/{provider}/…"),
  email: described(v.nullable(v.string()), "The address the provider showed at the last sign-in"),
  created_at: isoTime("When it was linked"),
});

/** The caller's account. */
export const Me = v.object({
  id: v.pipe(v.number(), v.integer()),
  email: v.string(),
  verified: v.boolean(),
  created_at: v.pipe(v.string(), v.isoTimestamp()),
  mfa: v.object({
    totp: described(v.boolean(), "Two-factor authentication (TOTP) is on"),
    recovery_codes_remaining: described(v.pipe(v.number(), v.integer()), "Unused recovery codes"),
  }),
  identities: described(v.array(Identity), "The sign-in providers linked to the account, oldest first"),
  has_password: described(
    v.boolean(),
    "False for an account made by a social sign-in (or whose password was cleared) until a password is set with forgot-password",
  ),
});
export type MeJson = v.InferOutput<typeof Me>;

/** One of the caller's passkeys. */
export const Passkey = v.object({
  id: described(v.string(), "Ours (not the credential id): for PATCH and DELETE /auth/passkeys/{id}"),
  name: described(v.string(), "The name given at registration or since; `Passkey` by default"),
  created_at: isoTime("The registration"),
  last_used_at: described(
    v.nullable(v.pipe(v.string(), v.isoTimestamp())),
    "The last sign-in with it; null before the first",
  ),
  backed_up: described(v.boolean(), "The authenticator reports it backed up (a synced passkey) as of its last use"),
});
export type PasskeyJson = v.InferOutput<typeof Passkey>;

/** Why POST /auth/passkeys/register/verify refused a new passkey (400). */
export const PASSKEY_REFUSALS = ["challenge", "origin", "rp_id", "user_verification", "invalid_response"] as const;
export type PasskeyRefusalReason = (typeof PASSKEY_REFUSALS)[number];

export const PasskeyRefusal = v.object({
  error: described(v.string(), "What went wrong, for a person"),
  reason: described(
    v.picklist(PASSKEY_REFUSALS),
    "For the app: `challenge` (unknown, used, expired, another account's or a sign-in's: ask for new options), `origin`, `rp_id`, " +
      "`user_verification` (the authenticator did not verify the user), `invalid_response` (anything else: malformed data, attestation, algorithm)",
  ),
});
export type PasskeyRefusalJson = v.InferOutput<typeof PasskeyRefusal>;

const base64urlText = (description: string) => described(v.string(), `${description}, base64url`);
const credentialDescriptor = v.object({
  id: base64urlText("A credential id"),
  type: v.literal("public-key"),
  transports: v.optional(v.array(v.string())),
});

/** PublicKeyCredentialCreationOptionsJSON (WebAuthn Level 3), as the registration options answer it. */
export const CreationOptions = v.object({
  rp: v.object({ id: described(v.string(), "WEBAUTHN_RP_ID"), name: described(v.string(), "WEBAUTHN_RP_NAME") }),
  user: v.object({
    id: base64urlText(
      `The account's WebAuthn user handle: ${PASSKEY_CHALLENGE_BYTES} random bytes, the same for every passkey of the account`,
    ),
    name: described(v.string(), "The account's address"),
    displayName: described(v.string(), "The account's address"),
  }),
  challenge: base64urlText(`${PASSKEY_CHALLENGE_BYTES} random bytes, single use`),
  pubKeyCredParams: described(
    v.array(v.object({ type: v.literal("public-key"), alg: v.number() })),
    "ES256 (-7), EdDSA (-8), RS256 (-257)",
  ),
  timeout: described(v.number(), "Milliseconds: as long as the challenge lives"),
  excludeCredentials: described(
    v.array(credentialDescriptor),
    "The account's passkeys: an authenticator that holds one makes no second",
  ),
  authenticatorSelection: v.object({
    residentKey: v.literal("required"),
    requireResidentKey: v.literal(true),
    userVerification: v.literal("required"),
  }),
  attestation: v.literal("none"),
  extensions: v.object({ credProps: v.literal(true) }),
});
export type CreationOptionsJson = v.InferOutput<typeof CreationOptions>;

/** PublicKeyCredentialRequestOptionsJSON (WebAuthn Level 3): no allowCredentials, the user picks a passkey. */
export const RequestOptions = v.object({
  rpId: described(v.string(), "WEBAUTHN_RP_ID"),
  challenge: base64urlText(`${PASSKEY_CHALLENGE_BYTES} random bytes, single use`),
  timeout: described(v.number(), "Milliseconds: as long as the challenge lives"),
  userVerification: v.literal("required"),
});
export type RequestOptionsJson = v.InferOutput<typeof RequestOptions>;

export const RegistrationOptions = v.object({ options: CreationOptions });
export const SignInOptions = v.object({ options: RequestOptions });

/**
 * A social sign-in refused after the provider's token checked out (POST /auth/oauth/{provider}/id-token): the web
 * flow's `error` values.
 */
export const OAuthRefusal = v.object({
  error: described(
    v.picklist(["email_not_verified", "account_conflict"]),
    "The same value the web flow hands the app as `error`",
  ),
  error_description: v.string(),
});
export type OAuthRefusalJson = v.InferOutput<typeof OAuthRefusal>;
