import type { AuthenticatorTransport } from "@simplewebauthn/server";
import type { WebAuthnConfig } from "../../config";
import { base64url, fromBase64url } from "../../lib/encoding";
import type { CreationOptionsJson, PasskeyRefusalReason, RequestOptionsJson } from "../shapes";
import type { AuthenticationResponseInput, RegistrationResponseInput } from "./credential-json";
import { PASSKEY_CHALLENGE_BYTES } from "../policy";

/**
 * Our one door to @simplewebauthn/server (WebCrypto, so it runs in workerd): the two ceremonies' options,
 * and the checks of what an authenticator sent back. The routes call these with the challenge they have
 * already claimed (store.ts); nothing here touches the database. The options are copied field by field into
 * our documented shapes, so the API answers what /openapi.json says whatever a later version adds.
 */

/**
 * The library, loaded on the isolate's first ceremony, not before every other request's first answer
 * (docs/performance.md, "Startup"): it is half the bundle.
 */
const library = () => import("@simplewebauthn/server");
const helpers = () => import("@simplewebauthn/server/helpers");

/** The algorithms a new passkey may use, in our order of preference, by their COSE ids. */
const ALGORITHMS = { ES256: -7, EdDSA: -8, RS256: -257 };
const PASSKEY_ALGORITHMS = Object.values(ALGORITHMS);

/** Their names, for the docs: "ES256, EdDSA or RS256". */
export const PASSKEY_ALGORITHM_NAMES = Object.keys(ALGORITHMS)
  .join(", ")
  .replace(/, (\w+)$/, " or $1");

/** The transports WebAuthn names: what the browser may use to reach the authenticator; anything else is dropped. */
const TRANSPORTS: readonly string[] = ["ble", "hybrid", "internal", "nfc", "usb"] satisfies AuthenticatorTransport[];
const isTransport = (value: string): value is AuthenticatorTransport => TRANSPORTS.includes(value);

/** A new challenge (or user handle): PASSKEY_CHALLENGE_BYTES random bytes, base64url. */
export function randomBase64url(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(PASSKEY_CHALLENGE_BYTES)));
}

/** The challenge a response's clientDataJSON echoes; undefined when it is not client data at all. */
export function challengeOf(clientDataJSON: string): string | undefined {
  try {
    const data: unknown = JSON.parse(new TextDecoder().decode(fromBase64url(clientDataJSON)));
    const challenge = typeof data === "object" && data !== null && "challenge" in data ? data.challenge : undefined;
    return typeof challenge === "string" && challenge !== "" ? challenge : undefined;
  } catch {
    return undefined;
  }
}

export interface RegisteringAccount {
  email: string;
  /** The WebAuthn user handle, base64url. */
  handle: string;
  /** The account's passkeys, which the authenticator must not register again. */
  exclude: { credentialId: string; transports: string[] }[];
}

/** The options of navigator.credentials.create(): a discoverable passkey with user verification, no attestation. */
export async function creationOptions(
  rp: WebAuthnConfig,
  account: RegisteringAccount,
  challenge: string,
  timeoutMs: number,
): Promise<CreationOptionsJson> {
  const { generateRegistrationOptions } = await library();
  const options = await generateRegistrationOptions({
    rpName: rp.rpName,
    rpID: rp.rpId,
    userName: account.email,
    userDisplayName: account.email,
    userID: fromBase64url(account.handle),
    challenge: fromBase64url(challenge),
    timeout: timeoutMs,
    attestationType: "none",
    excludeCredentials: account.exclude.map(({ credentialId, transports }) => ({
      id: credentialId,
      transports: transports.filter(isTransport),
    })),
    authenticatorSelection: { residentKey: "required", userVerification: "required" },
    supportedAlgorithmIDs: PASSKEY_ALGORITHMS,
  });
  return {
    rp: { id: rp.rpId, name: options.rp.name },
    user: { id: options.user.id, name: options.user.name, displayName: options.user.displayName },
    challenge: options.challenge,
    pubKeyCredParams: options.pubKeyCredParams.map(({ alg }) => ({ type: "public-key", alg })),
    timeout: timeoutMs,
    excludeCredentials: (options.excludeCredentials ?? []).map(({ id, transports }) => ({
      id,
      type: "public-key",
      ...(transports?.length ? { transports } : {}),
    })),
    authenticatorSelection: { residentKey: "required", requireResidentKey: true, userVerification: "required" },
    attestation: "none",
    extensions: { credProps: true },
  };
}

/** The options of navigator.credentials.get(): no allowCredentials, so the user picks any passkey of this RP. */
export async function requestOptions(
  rp: WebAuthnConfig,
  challenge: string,
  timeoutMs: number,
): Promise<RequestOptionsJson> {
  const { generateAuthenticationOptions } = await library();
  const options = await generateAuthenticationOptions({
    rpID: rp.rpId,
    challenge: fromBase64url(challenge),
    timeout: timeoutMs,
    userVerification: "required",
  });
  return {
    rpId: options.rpId ?? rp.rpId,
    challenge: options.challenge,
    timeout: timeoutMs,
    userVerification: "required",
  };
}

/** A credential that passed registration, as it is stored. */
export interface NewCredential {
  credentialId: string;
  /** The COSE public key, base64url. */
  publicKey: string;
  counter: number;
  backedUp: boolean;
  transports: string[];
}

export type Refused = { refused: PasskeyRefusalReason; detail: string };

async function sameBytes(a: Uint8Array, text: string): Promise<boolean> {
  const b = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/**
 * The refusals an app can act on, named before the library's full check (which would only say "failed"):
 * another origin, another RP ID, no user verification. Undefined when none applies.
 */
async function namedRefusal(rp: WebAuthnConfig, response: RegistrationResponseInput): Promise<Refused | undefined> {
  const { decodeAttestationObject, decodeClientDataJSON, parseAuthenticatorData } = await helpers();
  try {
    const { origin } = decodeClientDataJSON(response.response.clientDataJSON);
    if (!rp.origins.includes(origin)) return { refused: "origin", detail: `origin ${origin}` };
    const authData = decodeAttestationObject(fromBase64url(response.response.attestationObject)).get("authData");
    const { rpIdHash, flags } = parseAuthenticatorData(authData);
    if (!(await sameBytes(rpIdHash, rp.rpId)))
      return { refused: "rp_id", detail: "RP ID hash of another relying party" };
    if (!flags.uv) return { refused: "user_verification", detail: "UV flag not set" };
    return undefined;
  } catch (err) {
    return { refused: "invalid_response", detail: err instanceof Error ? err.message : String(err) };
  }
}

/** Checks a new credential made with `challenge` (already claimed): what to store, or why not. */
export async function checkRegistration(
  rp: WebAuthnConfig,
  response: RegistrationResponseInput,
  challenge: string,
): Promise<{ credential: NewCredential } | Refused> {
  const named = await namedRefusal(rp, response);
  if (named) return named;
  const transports = (response.response.transports ?? []).filter(isTransport);
  try {
    const { verifyRegistrationResponse } = await library();
    const { verified, registrationInfo } = await verifyRegistrationResponse({
      response: {
        ...response,
        response: { ...response.response, transports },
        clientExtensionResults: {},
        authenticatorAttachment: undefined,
      },
      expectedChallenge: challenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.rpId,
      requireUserVerification: true,
      supportedAlgorithmIDs: PASSKEY_ALGORITHMS,
    });
    if (!verified) return { refused: "invalid_response", detail: "attestation not verified" };
    const { credential, credentialBackedUp } = registrationInfo;
    return {
      credential: {
        credentialId: credential.id,
        publicKey: base64url(credential.publicKey),
        counter: credential.counter,
        backedUp: credentialBackedUp,
        transports,
      },
    };
  } catch (err) {
    return { refused: "invalid_response", detail: err instanceof Error ? err.message : String(err) };
  }
}

/** A stored passkey, as a sign-in checks its assertion against it. */
export interface StoredCredential {
  credentialId: string;
  publicKey: string;
  counter: number;
  transports: string;
}

/** What a good assertion tells: the counter it carries, and how the key is kept. */
export interface Asserted {
  counter: number;
  backedUp: boolean;
  /** The key cannot leave its authenticator (no backup eligibility): `hwk` rather than `swk`. */
  deviceBound: boolean;
}

/**
 * Checks an assertion made with `challenge` (already claimed) against the stored passkey: origin, RP ID,
 * user verification, the signature, and the counter, which must move forward unless both it and the stored
 * one are 0. What it tells, or why not (for the log: the client is told one thing only).
 */
export async function checkAssertion(
  rp: WebAuthnConfig,
  response: AuthenticationResponseInput,
  challenge: string,
  stored: StoredCredential,
): Promise<Asserted | { refused: string }> {
  try {
    const { verifyAuthenticationResponse } = await library();
    const { verified, authenticationInfo } = await verifyAuthenticationResponse({
      response: {
        ...response,
        response: { ...response.response, userHandle: response.response.userHandle ?? undefined },
        clientExtensionResults: {},
        authenticatorAttachment: undefined,
      },
      expectedChallenge: challenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.rpId,
      credential: {
        id: stored.credentialId,
        publicKey: fromBase64url(stored.publicKey),
        counter: stored.counter,
      },
      requireUserVerification: true,
    });
    if (!verified) return { refused: "bad signature" };
    const { newCounter, credentialBackedUp, credentialDeviceType } = authenticationInfo;
    return { counter: newCounter, backedUp: credentialBackedUp, deviceBound: credentialDeviceType === "singleDevice" };
  } catch (err) {
    return { refused: err instanceof Error ? err.message : String(err) };
  }
}
