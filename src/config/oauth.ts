import { ConfigError, list, nonEmpty } from "./parse";

/** The social sign-in settings (auth/oauth/): OAUTH_PROVIDERS, each provider's OAUTH_<N>_*, OAUTH_REDIRECT_URLS. */

/**
 * How the service authenticates to a provider's token endpoint (the web flow); none: only the native id-token route.
 */
export type ClientSecret =
  { kind: "static"; value: string } | { kind: "apple"; teamId: string; keyId: string; privateKey: string };

/** One provider of OAUTH_PROVIDERS, checked. */
export interface OAuthProvider {
  /** The name in OAUTH_PROVIDERS and in the routes (`/auth/oauth/{name}/…`). */
  name: string;
  /**
   * "oidc": an OpenID provider, its endpoints read from the issuer's discovery document; "github": GitHub's OAuth 2 and
   * user API.
   */
  protocol: "oidc" | "github";
  clientId: string;
  /** Further client ids a native id_token may be issued to (OAUTH_<N>_AUDIENCES). */
  audiences: string[];
  /** The OpenID issuer; for GitHub its web address. Identities are kept by issuer and subject. */
  issuer: string;
  /** GitHub's API base (OAUTH_GITHUB_API_URL); undefined for OpenID providers. */
  apiUrl: string | undefined;
  clientSecret: ClientSecret | undefined;
}

export interface OAuthConfig {
  providers: ReadonlyMap<string, OAuthProvider>;
  /** OAUTH_REDIRECT_URLS: the app URLs a flow may return to, compared exactly. */
  redirectUrls: readonly string[];
}

/**
 * Issuers that need no OAUTH_<N>_ISSUER; GitHub's web and API addresses, which OAUTH_GITHUB_URL and
 * OAUTH_GITHUB_API_URL replace (tests, GitHub Enterprise).
 */
export const PRESET_ISSUERS: Readonly<Record<string, string>> = {
  google: "https://accounts.google.com",
  apple: "https://appleid.apple.com",
};
export const GITHUB_URL = "https://github.com";
export const GITHUB_API_URL = "https://api.github.com";

/** A host a plain-http address may name: the machine itself (local development and tests). */
export function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** Schemes a browser would run or read locally rather than hand to an app: never a place to send a login code. */
const UNSAFE_SCHEMES = ["javascript:", "data:", "vbscript:", "file:", "blob:", "about:"];

/**
 * A provider's address: https, or http on loopback; no query or fragment. Kept as written: an issuer is
 * compared exactly, trailing slash included (some providers' have one).
 */
function providerUrl(name: string, raw: string): string {
  const url = URL.parse(raw);
  const ok =
    url &&
    (url.protocol === "https:" || (url.protocol === "http:" && isLoopback(url.hostname))) &&
    !url.search &&
    !url.hash;
  if (!ok)
    throw new ConfigError(`${name} must be an https URL (http only on a loopback host), without query or fragment`);
  return raw;
}

/**
 * An app URL a flow may return to: https, http on loopback, or an app's own scheme (`com.example.app:/oauth`); no
 * fragment.
 */
function redirectUrl(raw: string): string {
  const url = URL.parse(raw);
  const scheme = url?.protocol ?? "";
  const ok =
    url &&
    !url.hash &&
    !raw.includes("#") &&
    !UNSAFE_SCHEMES.includes(scheme) &&
    (scheme !== "http:" || isLoopback(url.hostname));
  if (!ok)
    throw new ConfigError(
      `OAUTH_REDIRECT_URLS: ${raw} is not an https URL, a loopback http URL or an app scheme URL without fragment`,
    );
  return raw;
}

/** A setting whose name is made from a provider's: read from the bindings by name. */
function dynamic(env: object, name: string): string | undefined {
  const value: unknown = Reflect.get(env, name);
  return typeof value === "string" ? nonEmpty(value) : undefined;
}

/** Apple's client secret is a JWT the service signs itself: all three settings, or none (no web flow). */
function appleSecret(env: object): ClientSecret | undefined {
  const [teamId, keyId, pem] = ["OAUTH_APPLE_TEAM_ID", "OAUTH_APPLE_KEY_ID", "OAUTH_APPLE_PRIVATE_KEY"].map((name) =>
    dynamic(env, name),
  );
  if (!teamId && !keyId && !pem) return undefined;
  // A PEM pasted into one line keeps its line breaks as "\n".
  const privateKey = pem?.replace(/\\n/g, "\n");
  if (!teamId || !keyId || !privateKey)
    throw new ConfigError(
      "OAUTH_APPLE_TEAM_ID, OAUTH_APPLE_KEY_ID and OAUTH_APPLE_PRIVATE_KEY go together: set all three",
    );
  if (!/^-----BEGIN PRIVATE KEY-----\s+[A-Za-z0-9+/=\s]+-----END PRIVATE KEY-----$/.test(privateKey)) {
    throw new ConfigError("OAUTH_APPLE_PRIVATE_KEY must be the PKCS#8 PEM of the key (-----BEGIN PRIVATE KEY-----)");
  }
  return { kind: "apple", teamId, keyId, privateKey };
}

function oauthProvider(env: object, name: string): OAuthProvider {
  if (!/^[a-z0-9]+$/.test(name))
    throw new ConfigError(`OAUTH_PROVIDERS: "${name}" must be lowercase letters and digits`);
  const prefix = `OAUTH_${name.toUpperCase()}_`;
  const clientId = dynamic(env, `${prefix}CLIENT_ID`);
  if (!clientId) throw new ConfigError(`${prefix}CLIENT_ID is required for the provider ${name}`);
  const secret = dynamic(env, `${prefix}CLIENT_SECRET`);
  const clientSecret =
    name === "apple" ? appleSecret(env) : secret === undefined ? undefined : { kind: "static" as const, value: secret };
  const audiences = list(dynamic(env, `${prefix}AUDIENCES`));
  if (name === "github") {
    // GitHub's addresses are bases that paths are appended to.
    const issuer = providerUrl("OAUTH_GITHUB_URL", dynamic(env, "OAUTH_GITHUB_URL") ?? GITHUB_URL).replace(/\/+$/, "");
    const apiUrl = providerUrl("OAUTH_GITHUB_API_URL", dynamic(env, "OAUTH_GITHUB_API_URL") ?? GITHUB_API_URL).replace(
      /\/+$/,
      "",
    );
    return { name, protocol: "github", clientId, audiences, issuer, apiUrl, clientSecret };
  }
  const issuer = dynamic(env, `${prefix}ISSUER`) ?? PRESET_ISSUERS[name];
  if (!issuer) throw new ConfigError(`${prefix}ISSUER is required for the OpenID provider ${name}`);
  return {
    name,
    protocol: "oidc",
    clientId,
    audiences,
    issuer: providerUrl(`${prefix}ISSUER`, issuer),
    apiUrl: undefined,
    clientSecret,
  };
}

/** OAUTH_PROVIDERS and each provider's settings, and OAUTH_REDIRECT_URLS. */
export function readOAuth(env: Env): OAuthConfig {
  const names = list(env.OAUTH_PROVIDERS).map((name) => name.toLowerCase());
  if (new Set(names).size !== names.length) throw new ConfigError("OAUTH_PROVIDERS names a provider twice");
  return {
    providers: new Map(names.map((name) => [name, oauthProvider(env, name)])),
    redirectUrls: list(env.OAUTH_REDIRECT_URLS).map(redirectUrl),
  };
}
