import type * as oauth from "oauth4webapi";
import type { OAuthProvider } from "../../config";
import { sha256Hex } from "../../lib/crypto";

/**
 * A sign-in provider as the flows see it: one object per OAUTH_PROVIDERS entry (providers.ts makes them), each
 * protocol's quirks inside its own class: OpenID providers (oidc.ts), with Google's (google.ts) and Apple's
 * (apple.ts) differences, and GitHub's OAuth 2 and user API (github.ts). The flows (web.ts, native.ts) ask
 * only this interface.
 */
export interface SignInProvider {
  /** The provider's checked settings (its name, client id, issuer, audiences, secret). */
  readonly settings: OAuthProvider;
  /** Whether the native flow takes the provider's id_tokens (GitHub has none). */
  readonly supportsIdTokens: boolean;
  /** Where a web sign-in sends the browser. Throws ProviderUnavailable when the provider cannot be reached. */
  authorizeUrl(request: AuthorizeRequest): Promise<URL>;
  /**
   * The identity the callback's code stands for: the code exchanged at the token endpoint with the service's
   * PKCE verifier and client authentication, then the id_token or the user API; or the error to hand the app,
   * with why. Throws a ConfigError (no client secret).
   */
  exchange(callback: CodeCallback): Promise<{ identity: ProviderIdentity } | { error: ExchangeError; reason: string }>;
  /** The identity of an id_token (the native flow). Throws ProviderUnavailable. */
  identity(idToken: string, rules: IdTokenRules): Promise<IdTokenCheck>;
}

/**
 * Who a provider says signed in: its identity (issuer and subject) and the address it shows, with whether
 * it vouches for that address.
 */
export interface ProviderIdentity {
  issuer: string;
  subject: string;
  /** Normalized as every address here (requests.ts); undefined when the provider shows none. */
  email: string | undefined;
  /** The provider vouches for the address (`email_verified`, GitHub's `verified`). */
  vouched: boolean;
}

/** What the authorize redirect carries of the service's own: its callback, state, nonce and PKCE challenge. */
export interface AuthorizeRequest {
  callbackUrl: string;
  state: string;
  nonce: string;
  codeChallenge: string;
}

/** What the callback hands the exchange: the callback's query, the state it claimed, and the service's callback. */
export interface CodeCallback {
  params: URLSearchParams;
  stateValue: string;
  codeVerifier: string;
  nonce: string;
  callbackUrl: string;
}

/** What an id_token must be besides well signed: for one of `audiences`, and a `nonce` the caller's check accepts. */
export interface IdTokenRules {
  audiences: string[];
  nonce: (claim: unknown) => Promise<boolean>;
}

/**
 * A verified id_token's identity, and until when the token would still verify (milliseconds): what remembers it as
 * taken must keep it that long (oauth/native.ts). Or why it was refused.
 */
export type IdTokenCheck =
  { identity: ProviderIdentity; expiresAt: number } | { refused: "invalid" | "nonce"; reason?: string };

/**
 * The `error` the app is handed when the exchange fails: RFC 6749 codes, and `invalid_token` for a token that fails
 * verification.
 */
export type ExchangeError = "invalid_grant" | "invalid_token" | "temporarily_unavailable";

/** The provider could not be reached, or answered its metadata or keys with something unusable. */
export class ProviderUnavailable extends Error {
  override name = "ProviderUnavailable";
}

/** Runs `work` that reaches a provider: any failure becomes ProviderUnavailable. */
export async function unavailableOnFailure<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw new ProviderUnavailable(err instanceof Error ? err.message : String(err), { cause: err });
  }
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

/** The authorization server a code grant talks to: its endpoints. */
export type Server = oauth.AuthorizationServer;
