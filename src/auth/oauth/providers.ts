import { PRESET_ISSUERS, type OAuthProvider } from "../../config";
import { AppleProvider } from "./apple";
import { GitHubProvider } from "./github";
import { GoogleProvider } from "./google";
import { OpenIdProvider } from "./oidc";
import type { SignInProvider } from "./provider";

/**
 * The sign-in provider of each OAUTH_PROVIDERS entry: the one place that picks the class of a provider's
 * quirks, by its protocol, name or issuer. One object per settings object, so an isolate makes each once.
 */
const made = new WeakMap<OAuthProvider, SignInProvider>();

export function signInProvider(settings: OAuthProvider): SignInProvider {
  let provider = made.get(settings);
  if (!provider) made.set(settings, (provider = build(settings)));
  return provider;
}

function build(settings: OAuthProvider): SignInProvider {
  if (settings.protocol === "github") return new GitHubProvider(settings);
  if (settings.name === "apple") return new AppleProvider(settings);
  if (settings.issuer === PRESET_ISSUERS.google) return new GoogleProvider(settings);
  return new OpenIdProvider(settings);
}
