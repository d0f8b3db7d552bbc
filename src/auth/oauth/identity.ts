import type { JWTPayload } from "jose";
import type * as oauth from "oauth4webapi";
import type { OAuthProvider } from "../../config";
import { sha256Hex } from "../../lib/crypto";
import { normalizeEmail } from "../schemas";
import { ProviderUnavailable, verifyWithKeys } from "./providers";

/**
 * Who a provider says signed in: its identity (issuer and subject) and the address it shows, with whether
 * it vouches for that address. Built from a verified id_token (OpenID providers) or GitHub's API (github.ts).
 */
export interface ProviderIdentity {
  issuer: string;
  subject: string;
  /** Normalized as every address here (schemas.ts); undefined when the provider shows none. */
  email: string | undefined;
  /** `email_verified` is true, or the string "true" Apple sends. */
  vouched: boolean;
}

/** id_tokens are signed with one of these (Google and Apple use RS256); never `none` or a shared-secret HS*. */
export const ID_TOKEN_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
];
/** Clocks may differ by this much (seconds) when `exp` and `iat` are checked. */
export const CLOCK_TOLERANCE_SECONDS = 30;

/** Google's id_tokens name their issuer with or without the scheme. */
function acceptedIssuers(issuer: string): string[] {
  return issuer === "https://accounts.google.com" ? [issuer, "accounts.google.com"] : [issuer];
}

/** What an id_token must be besides well signed: for one of `audiences`, and a `nonce` the caller's check accepts. */
export interface IdTokenRules {
  audiences: string[];
  nonce: (claim: unknown) => Promise<boolean>;
}

/**
 * The identity of an id_token whose signature (the provider's JWKS), `iss`, `aud` and `exp` check out and
 * whose nonce passes; undefined when any of that fails. A provider that cannot be reached throws
 * ProviderUnavailable.
 */
export async function identityOfIdToken(
  provider: OAuthProvider,
  server: oauth.AuthorizationServer,
  token: string,
  rules: IdTokenRules,
): Promise<{ identity: ProviderIdentity } | { refused: "invalid" | "nonce"; reason?: string }> {
  if (!server.jwks_uri) throw new ProviderUnavailable("the provider's metadata has no jwks_uri");
  let payload: JWTPayload;
  try {
    payload = await verifyWithKeys(token, server.jwks_uri, {
      issuer: acceptedIssuers(provider.issuer),
      audience: rules.audiences,
      algorithms: ID_TOKEN_ALGORITHMS,
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      requiredClaims: ["sub", "exp", "iat"],
    });
  } catch (err) {
    if (err instanceof ProviderUnavailable) throw err;
    return { refused: "invalid", reason: err instanceof Error ? err.message : String(err) };
  }
  if (!(await rules.nonce(payload.nonce))) return { refused: "nonce" };
  const { email, email_verified: verified } = payload;
  return {
    identity: {
      issuer: provider.issuer,
      subject: payload.sub!,
      email: typeof email === "string" && email.trim() !== "" ? normalizeEmail(email) : undefined,
      vouched: verified === true || verified === "true",
    },
  };
}

/** The web flow's nonce rule: the token carries exactly the nonce the flow sent. */
export const sameNonce = (expected: string) => (claim: unknown) => Promise.resolve(claim === expected);

/**
 * The native rule: a token that carries a nonce needs the app's `nonce`, as it is or as its hex SHA-256
 * (Sign in with Apple takes the hash); a token without one is refused when the app sent one.
 */
export const appNonce = (sent: string | undefined) => async (claim: unknown) => {
  if (claim === undefined) return sent === undefined;
  return sent !== undefined && typeof claim === "string" && (claim === sent || claim === (await sha256Hex(sent)));
};
