import * as oauth from "oauth4webapi";
import { ConfigError } from "../../config";
import type { Logger } from "../../lib/log";
import type { CodeCallback, ProviderIdentity, SignInProvider } from "./provider";

/**
 * The web flow's code exchange (the provider's own steps are its `exchange`), and what a failure tells the app.
 */

/**
 * The `error` the app is handed when the exchange fails: RFC 6749 codes, and `invalid_token` for a token that fails
 * verification.
 */
export type ExchangeError = "invalid_grant" | "invalid_token" | "temporarily_unavailable";

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
  provider: SignInProvider,
  callback: CodeCallback,
): Promise<{ identity: ProviderIdentity } | { error: ExchangeError }> {
  const { name } = provider.settings;
  try {
    const identity = await provider.exchange(callback);
    if (identity) return { identity };
    log.warn("oauth_token_refused", { provider: name, reason: "id_token or user API answer failed verification" });
    return { error: "invalid_token" };
  } catch (err) {
    const error = classify(err);
    log.warn("oauth_exchange_failed", {
      provider: name,
      error,
      reason: err instanceof Error ? err.message : String(err),
    });
    return { error };
  }
}
