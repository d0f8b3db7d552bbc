import * as oauth from "oauth4webapi";
import { ConfigError, type OAuthProvider } from "../../config";
import type { Logger } from "../../lib/log";
import { githubIdentity } from "./github";
import { identityOfIdToken, sameNonce, type ProviderIdentity } from "./identity";
import { authorizationServer, clientAuthentication, requestOptions } from "./providers";
import type { OAuthState } from "./store";

/**
 * The web flow's code exchange at the provider's token endpoint, with the service's PKCE verifier and
 * client authentication (oauth4webapi, which also checks the id_token's claims), then the id_token's
 * signature and claims (identity.ts, the same check as the native flow), or GitHub's user API.
 */

/**
 * The `error` the app is handed when the exchange fails: RFC 6749 codes, and `invalid_token` for a token that fails
 * verification.
 */
export type ExchangeError = "invalid_grant" | "invalid_token" | "temporarily_unavailable";

async function identityOfResponse(
  provider: OAuthProvider,
  server: oauth.AuthorizationServer,
  response: Response,
  state: OAuthState,
) {
  const client = { client_id: provider.clientId };
  if (provider.protocol === "github") {
    const result = await oauth.processAuthorizationCodeResponse(server, client, response);
    return githubIdentity(provider, result.access_token);
  }
  const result = await oauth.processAuthorizationCodeResponse(server, client, response, {
    expectedNonce: state.nonce,
    requireIdToken: true,
  });
  const verified = await identityOfIdToken(provider, server, result.id_token!, {
    audiences: [provider.clientId],
    nonce: sameNonce(state.nonce),
  });
  return "identity" in verified ? verified.identity : undefined;
}

/**
 * What a failed exchange tells the app: the provider refused the code (its OAuth error), or its answer did
 * not check out (oauth4webapi's own errors), or anything else: the provider could not be reached or timed out.
 */
function classify(err: unknown): ExchangeError {
  if (err instanceof ConfigError) throw err;
  if (err instanceof oauth.ResponseBodyError) return "invalid_grant";
  const unusable = [
    oauth.OperationProcessingError,
    oauth.UnsupportedOperationError,
    oauth.WWWAuthenticateChallengeError,
    oauth.AuthorizationResponseError,
  ];
  return unusable.some((kind) => err instanceof kind) ? "invalid_token" : "temporarily_unavailable";
}

/** The identity the callback's `code` stands for, or the error to hand the app. */
export async function exchangeCode(
  log: Logger,
  provider: OAuthProvider,
  {
    params,
    state,
    stateValue,
    callbackUrl,
  }: { params: URLSearchParams; state: OAuthState; stateValue: string; callbackUrl: string },
): Promise<{ identity: ProviderIdentity } | { error: ExchangeError }> {
  try {
    const server = await authorizationServer(provider);
    const client = { client_id: provider.clientId };
    const auth = await clientAuthentication(provider, server);
    if (!auth)
      throw new ConfigError(
        `OAUTH_${provider.name.toUpperCase()}_CLIENT_SECRET is not set; the web flow cannot exchange codes`,
      );
    const callback = oauth.validateAuthResponse(server, client, params, stateValue);
    const options = requestOptions(server.token_endpoint ?? provider.issuer);
    const response = await oauth.authorizationCodeGrantRequest(
      server,
      client,
      auth,
      callback,
      callbackUrl,
      state.codeVerifier,
      options,
    );
    const identity = await identityOfResponse(provider, server, response, state);
    if (identity) return { identity };
    log.warn("oauth_token_refused", {
      provider: provider.name,
      reason: "id_token or user API answer failed verification",
    });
    return { error: "invalid_token" };
  } catch (err) {
    const error = classify(err);
    log.warn("oauth_exchange_failed", {
      provider: provider.name,
      error,
      reason: err instanceof Error ? err.message : String(err),
    });
    return { error };
  }
}
