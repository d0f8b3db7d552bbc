import * as oauth from "oauth4webapi";
import { ConfigError, type OAuthProvider } from "../../config";
import { PROVIDER_TIMEOUT_MS } from "../policy";
import {
  ProviderUnavailable,
  type AuthorizeRequest,
  type CodeCallback,
  type ExchangeError,
  type IdTokenCheck,
  type IdTokenRules,
  type ProviderIdentity,
  type Server,
  type SignInProvider,
} from "./provider";

/**
 * oauth4webapi's request options for a provider: plain http is allowed only for a loopback issuer (config
 * checked it).
 */
export function requestOptions(url: string) {
  return { signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS), [oauth.allowInsecureRequests]: url.startsWith("http:") };
}

/**
 * What a failed exchange tells the app: the provider refused the code (its OAuth error), or its answer did
 * not check out (oauth4webapi's own errors), or anything else: the provider could not be reached or timed out.
 */
function exchangeError(err: unknown): ExchangeError {
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

/**
 * What every provider here shares: OAuth 2's authorization code grant with PKCE (RFC 7636) and a client
 * secret. A protocol says where its endpoints are, what it asks for, and who the token's answer names.
 */
export abstract class CodeGrantProvider implements SignInProvider {
  abstract readonly supportsIdTokens: boolean;
  /** The scope a web sign-in asks for. */
  protected abstract readonly scope: string;

  constructor(readonly settings: OAuthProvider) {}

  /** The provider's authorization and token endpoints. Throws ProviderUnavailable. */
  protected abstract server(): Promise<Server>;

  /** Who the token endpoint's answer names; undefined when it does not check out. */
  protected abstract identityOfResponse(
    server: Server,
    response: Response,
    callback: CodeCallback,
  ): Promise<ProviderIdentity | undefined>;

  abstract identity(idToken: string, rules: IdTokenRules): Promise<IdTokenCheck>;

  /** Query parameters the provider's authorize URL needs beyond OAuth's. */
  protected authorizeExtras(): Record<string, string> {
    return {};
  }

  /** The client secret presented at the token endpoint; undefined: none here (native sign-in only). */
  protected clientSecret(): Promise<string | undefined> {
    const secret = this.settings.clientSecret;
    return Promise.resolve(secret?.kind === "static" ? secret.value : undefined);
  }

  async authorizeUrl({ callbackUrl, state, nonce, codeChallenge }: AuthorizeRequest): Promise<URL> {
    const server = await this.server();
    if (!server.authorization_endpoint)
      throw new ProviderUnavailable("the provider's metadata has no authorization_endpoint");
    const url = new URL(server.authorization_endpoint);
    const query = {
      response_type: "code",
      client_id: this.settings.clientId,
      redirect_uri: callbackUrl,
      scope: this.scope,
      state,
      nonce,
      code_challenge: codeChallenge,
      code_challenge_method: "S256",
      ...this.authorizeExtras(),
    };
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    return url;
  }

  async exchange(callback: CodeCallback) {
    try {
      const identity = await this.exchanged(callback);
      if (identity) return { identity };
      return { error: "invalid_token" as const, reason: "id_token or user API answer failed verification" };
    } catch (err) {
      return { error: exchangeError(err), reason: err instanceof Error ? err.message : String(err) };
    }
  }

  private async exchanged(callback: CodeCallback): Promise<ProviderIdentity | undefined> {
    const server = await this.server();
    const client = { client_id: this.settings.clientId };
    const auth = await this.clientAuthentication(server);
    const validated = oauth.validateAuthResponse(server, client, callback.params, callback.stateValue);
    const response = await oauth.authorizationCodeGrantRequest(
      server,
      client,
      auth,
      validated,
      callback.callbackUrl,
      callback.codeVerifier,
      requestOptions(server.token_endpoint ?? this.settings.issuer),
    );
    return this.identityOfResponse(server, response, callback);
  }

  /**
   * How the service authenticates at the token endpoint: `client_secret_post` (Google, Apple and GitHub take
   * it), or `client_secret_basic` for a provider whose metadata offers only that.
   */
  private async clientAuthentication(server: Server): Promise<oauth.ClientAuth> {
    const secret = await this.clientSecret();
    if (!secret) {
      const name = this.settings.name.toUpperCase();
      throw new ConfigError(`OAUTH_${name}_CLIENT_SECRET is not set; the web flow cannot exchange codes`);
    }
    const methods = server.token_endpoint_auth_methods_supported ?? [];
    return methods.includes("client_secret_basic") && !methods.includes("client_secret_post")
      ? oauth.ClientSecretBasic(secret)
      : oauth.ClientSecretPost(secret);
  }
}
