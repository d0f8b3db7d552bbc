import { createLocalJWKSet, errors, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyOptions } from "jose";
import * as oauth from "oauth4webapi";
import type { OAuthProvider } from "../../config";
import { HOUR, MINUTE, SECOND } from "../../lib/units";
import { appleClientSecret } from "./apple-secret";

/**
 * What the service needs of a provider at run time: its endpoints (an OpenID provider's from its discovery
 * document; GitHub's are fixed), its signing keys, and how the service authenticates at its token endpoint.
 * Discovery documents and key sets are kept per isolate as plain data (never a pending promise, which
 * another request could not await), and fetched again once stale.
 */

/** A provider's answer may take this long; after it the sign-in fails as unavailable. */
export const PROVIDER_TIMEOUT_MS = 10 * SECOND;
/** A discovery document is used this long before it is fetched again. */
export const DISCOVERY_TTL_MS = HOUR;
/**
 * A key set is used this long before it is fetched again, and fetched again early for an unknown key at most this
 * often.
 */
export const JWKS_TTL_MS = 10 * MINUTE;
export const JWKS_REFETCH_MS = 30 * SECOND;

/** The provider could not be reached, or answered its metadata or keys with something unusable. */
export class ProviderUnavailable extends Error {
  override name = "ProviderUnavailable";
}

/**
 * oauth4webapi's request options for a provider: plain http is allowed only for a loopback issuer (config.ts checked
 * it).
 */
export function requestOptions(url: string) {
  return { signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS), [oauth.allowInsecureRequests]: url.startsWith("http:") };
}

const servers = new Map<string, { server: oauth.AuthorizationServer; fetchedAt: number }>();

/** The provider's authorization server: for an OpenID provider, its discovery document (checked to name the issuer). */
export async function authorizationServer(provider: OAuthProvider): Promise<oauth.AuthorizationServer> {
  if (provider.protocol === "github") {
    return {
      issuer: provider.issuer,
      authorization_endpoint: `${provider.issuer}/login/oauth/authorize`,
      token_endpoint: `${provider.issuer}/login/oauth/access_token`,
    };
  }
  const now = Date.now();
  const cached = servers.get(provider.issuer);
  if (cached && now - cached.fetchedAt < DISCOVERY_TTL_MS) return cached.server;
  const server = await unavailableOnFailure(async () => {
    const issuer = new URL(provider.issuer);
    return oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, requestOptions(provider.issuer)),
    );
  });
  servers.set(provider.issuer, { server, fetchedAt: now });
  return server;
}

/** Runs `work` that reaches a provider: any failure becomes ProviderUnavailable. */
async function unavailableOnFailure<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw new ProviderUnavailable(err instanceof Error ? err.message : String(err), { cause: err });
  }
}

const keySets = new Map<string, { keys: ReturnType<typeof createLocalJWKSet>; fetchedAt: number }>();

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
export async function verifyWithKeys(token: string, jwksUri: string, options: JWTVerifyOptions): Promise<JWTPayload> {
  try {
    return (await jwtVerify(token, await keySet(jwksUri, false), options)).payload;
  } catch (err) {
    if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
    return (await jwtVerify(token, await keySet(jwksUri, true), options)).payload;
  }
}

/**
 * How the service authenticates at the token endpoint: `client_secret_post` (Google, Apple and GitHub take
 * it), or `client_secret_basic` for a provider whose metadata offers only that. Apple's secret is a JWT the
 * service signs (apple-secret.ts). Undefined: the provider has no secret here (native sign-in only).
 */
export async function clientAuthentication(
  provider: OAuthProvider,
  server: oauth.AuthorizationServer,
): Promise<oauth.ClientAuth | undefined> {
  const secret = provider.clientSecret;
  if (!secret) return undefined;
  const value =
    secret.kind === "apple"
      ? await appleClientSecret(provider.clientId, provider.issuer, secret, Date.now())
      : secret.value;
  const methods = server.token_endpoint_auth_methods_supported ?? [];
  return methods.includes("client_secret_basic") && !methods.includes("client_secret_post")
    ? oauth.ClientSecretBasic(value)
    : oauth.ClientSecretPost(value);
}
