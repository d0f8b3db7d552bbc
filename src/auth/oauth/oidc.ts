import { createLocalJWKSet, errors, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyOptions } from "jose";
import * as oauth from "oauth4webapi";
import { SECOND } from "../../lib/units";
import {
  CLOCK_TOLERANCE_SECONDS,
  DISCOVERY_TTL_MS,
  ID_TOKEN_MAX_AGE_MS,
  JWKS_REFETCH_MS,
  JWKS_TTL_MS,
  PROVIDER_TIMEOUT_MS,
} from "../policy";
import { normalizeEmail } from "../requests";
import { CodeGrantProvider, requestOptions } from "./code-grant";
import {
  ProviderUnavailable,
  sameNonce,
  unavailableOnFailure,
  type CodeCallback,
  type IdTokenCheck,
  type IdTokenRules,
  type ProviderIdentity,
  type Server,
} from "./provider";

/**
 * An OpenID provider: its endpoints from the issuer's discovery document, identities from id_tokens signed
 * with its keys (JWKS). Discovery documents and key sets are kept per isolate as plain data (never a pending
 * promise, which another request could not await), and fetched again once stale.
 */

/** id_tokens are signed with one of these (Google and Apple use RS256); never `none` or a shared-secret HS*. */
const ID_TOKEN_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];

const servers = new Map<string, { server: Server; fetchedAt: number }>();
const keySets = new Map<string, { keys: ReturnType<typeof createLocalJWKSet>; fetchedAt: number }>();

export class OpenIdProvider extends CodeGrantProvider {
  readonly supportsIdTokens = true;
  protected readonly scope = "openid email";

  /** The issuers its id_tokens may name. */
  protected issuers(): string[] {
    return [this.settings.issuer];
  }

  /** Whether an id_token's `email_verified` vouches for its address. */
  protected vouches(claim: unknown): boolean {
    return claim === true;
  }

  /** The discovery document (checked to name the issuer). */
  protected async server(): Promise<Server> {
    const { issuer } = this.settings;
    const now = Date.now();
    const cached = servers.get(issuer);
    if (cached && now - cached.fetchedAt < DISCOVERY_TTL_MS) return cached.server;
    const server = await unavailableOnFailure(async () => {
      const url = new URL(issuer);
      return oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, requestOptions(issuer)));
    });
    servers.set(issuer, { server, fetchedAt: now });
    return server;
  }

  protected async identityOfResponse(server: Server, response: Response, callback: CodeCallback) {
    const client = { client_id: this.settings.clientId };
    const result = await oauth.processAuthorizationCodeResponse(server, client, response, {
      expectedNonce: callback.nonce,
      requireIdToken: true,
    });
    const verified = await this.verifiedIdentity(server, result.id_token!, {
      audiences: [this.settings.clientId],
      nonce: sameNonce(callback.nonce),
    });
    return "identity" in verified ? verified.identity : undefined;
  }

  async identity(idToken: string, rules: IdTokenRules): Promise<IdTokenCheck> {
    return this.verifiedIdentity(await this.server(), idToken, rules);
  }

  /**
   * The identity of an id_token whose signature (the provider's JWKS), `iss`, `aud`, `azp`, `exp` and `iat` check
   * out and whose nonce passes: `iat` no further ahead than the clocks may differ, nor older than
   * ID_TOKEN_MAX_AGE_MS; with several audiences an `azp`, and any `azp` one of ours (OpenID Connect Core 3.1.3.7).
   */
  private async verifiedIdentity(server: Server, token: string, rules: IdTokenRules): Promise<IdTokenCheck> {
    if (!server.jwks_uri) throw new ProviderUnavailable("the provider's metadata has no jwks_uri");
    let payload: JWTPayload;
    try {
      payload = await verifyWithKeys(token, server.jwks_uri, {
        issuer: this.issuers(),
        audience: rules.audiences,
        algorithms: ID_TOKEN_ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        maxTokenAge: ID_TOKEN_MAX_AGE_MS / SECOND,
        requiredClaims: ["sub", "exp", "iat"],
      });
    } catch (err) {
      if (err instanceof ProviderUnavailable) throw err;
      return { refused: "invalid", reason: err instanceof Error ? err.message : String(err) };
    }
    const party = authorizedPartyProblem(payload, rules.audiences);
    if (party) return { refused: "invalid", reason: party };
    if (!(await rules.nonce(payload.nonce))) return { refused: "nonce" };
    return { identity: this.identityOfClaims(payload), expiresAt: takenUntil(payload) };
  }

  private identityOfClaims(payload: JWTPayload): ProviderIdentity {
    const { email, email_verified: verified } = payload;
    return {
      issuer: this.settings.issuer,
      subject: payload.sub!,
      email: typeof email === "string" && email.trim() !== "" ? normalizeEmail(email) : undefined,
      vouched: this.vouches(verified),
    };
  }
}

/**
 * Why the token's authorized party is not one of ours: a token for several audiences must name the one it was issued
 * to (`azp`), and an `azp` must be one of `audiences` (the client id or one of OAUTH_<N>_AUDIENCES: Google's Android
 * tokens name the web client as `aud` and the Android client as `azp`). Undefined when it is.
 */
function authorizedPartyProblem(payload: JWTPayload, audiences: string[]): string | undefined {
  const { aud, azp } = payload;
  if (azp === undefined) return Array.isArray(aud) && aud.length > 1 ? "several audiences and no azp" : undefined;
  return typeof azp === "string" && audiences.includes(azp) ? undefined : "azp is not one of this provider's clients";
}

/** Until when a verified token would still verify (milliseconds): its `exp`, or ID_TOKEN_MAX_AGE_MS after its `iat`. */
function takenUntil(payload: JWTPayload): number {
  const last = Math.min(payload.exp! * SECOND, payload.iat! * SECOND + ID_TOKEN_MAX_AGE_MS);
  return last + CLOCK_TOLERANCE_SECONDS * SECOND;
}

async function keySet(jwksUri: string, fresh: boolean) {
  const now = Date.now();
  const cached = keySets.get(jwksUri);
  if (cached && now - cached.fetchedAt < (fresh ? JWKS_REFETCH_MS : JWKS_TTL_MS)) return cached.keys;
  const keys = await unavailableOnFailure(async () => {
    const response = await fetch(jwksUri, {
      signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS),
      headers: { Accept: "application/json" },
    });
    if (!response.ok) throw new Error(`JWKS answered ${response.status}`);
    return createLocalJWKSet(await response.json<JSONWebKeySet>());
  });
  keySets.set(jwksUri, { keys, fetchedAt: now });
  return keys;
}

/**
 * Verifies a JWT signed with one of the keys at `jwksUri` (jose: signature, then `options`' claims); a key
 * id the cached set does not have fetches the set again (providers rotate keys), at most every few seconds.
 */
async function verifyWithKeys(token: string, jwksUri: string, options: JWTVerifyOptions): Promise<JWTPayload> {
  try {
    return (await jwtVerify(token, await keySet(jwksUri, false), options)).payload;
  } catch (err) {
    if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
    return (await jwtVerify(token, await keySet(jwksUri, true), options)).payload;
  }
}
