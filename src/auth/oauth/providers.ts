import { PRESET_ISSUERS, type OAuthProvider } from "../../config";
import type { SignInProvider } from "./provider";

/**
 * The sign-in provider of each OAUTH_PROVIDERS entry: the one place that picks the class of a provider's
 * quirks, by its protocol, name or issuer. One object per settings object, so an isolate makes each once.
 * The classes (and oauth4webapi under them) are loaded on the first social sign-in of the isolate, not before
 * every other request's first answer (docs/performance.md, "Startup").
 */
const made = new WeakMap<OAuthProvider, Promise<SignInProvider>>();

export function signInProvider(settings: OAuthProvider): Promise<SignInProvider> {
  let provider = made.get(settings);
  if (!provider) made.set(settings, (provider = build(settings)));
  return provider;
}

async function build(settings: OAuthProvider): Promise<SignInProvider> {
  if (settings.protocol === "github") return new (await import("./github")).GitHubProvider(settings);
  if (settings.name === "apple") return new (await import("./apple")).AppleProvider(settings);
  if (settings.issuer === PRESET_ISSUERS.google) return new (await import("./google")).GoogleProvider(settings);
  return new (await import("./oidc")).OpenIdProvider(settings);
}
