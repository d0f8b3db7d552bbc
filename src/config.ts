export interface SmtpConfig {
  host: string;
  port: number;
  /** true: TLS from the first byte; false: plain, upgraded with STARTTLS when offered. */
  secure: boolean;
  /** MAIL_EMAIL: the SMTP user name and the From address. */
  username: string;
  password: string;
  fromName: string;
  timeoutMs: number;
}

export interface Config {
  bcryptCost: number;
  /** Undefined when JWT_SECRET_KEY is not set; login then fails loudly. */
  jwtSecret: string | undefined;
  /**
   * The secrets second-factor secrets are sealed under (lib/secret-box.ts), the current first:
   * MFA_ENCRYPTION_KEY (or JWT_SECRET_KEY without it), then MFA_ENCRYPTION_KEY_PREVIOUS while rotating.
   */
  mfaKeys: string[];
  /** Undefined when MAIL_EMAIL or MAIL_APP_PASSWORD is missing: no mail is sent. */
  smtp: SmtpConfig | undefined;
  /** false only with RATE_LIMITS=off: the per-client limiter is skipped (load tests, never production). */
  clientRateLimits: boolean;
  /** "required": the notes area needs a login token and shows each user only their own notes. */
  notesAuth: "off" | "required";
  /** NOTES_REQUIRE_IF_MATCH=true: PATCH and DELETE of a note need If-Match (428 without it). */
  notesRequireIfMatch: boolean;
  /** FAILED_CODE_HOURLY_LIMIT: failed code tries of all accounts together in an hour before all are refused. */
  failedCodeHourlyLimit: number;
  /** MAIL_HOURLY_LIMIT and MAIL_DAILY_LIMIT: mails the whole service may send in an hour, and in a day. */
  mailHourlyLimit: number;
  mailDailyLimit: number;
  /** Origins allowed cross-origin access (CORS_ORIGINS, comma-separated); empty: none. */
  corsOrigins: string[];
  /**
   * LOG_REQUESTS: which answers get a `request` log line. "errors" (the default): those with a status of 400
   * or more; "all": every answer. Workers Logs records every invocation (method, URL, status, time) anyway.
   */
  logRequests: "errors" | "all";
  /** Social sign-in (OAUTH_*): the providers by name, and the app URLs a flow may return to. */
  oauth: OAuthConfig;
}

/** How the service authenticates to a provider's token endpoint (the web flow); none: only the native id-token route. */
export type ClientSecret = { kind: "static"; value: string } | { kind: "apple"; teamId: string; keyId: string; privateKey: string };

/** One provider of OAUTH_PROVIDERS, checked. */
export interface OAuthProvider {
  /** The name in OAUTH_PROVIDERS and in the routes (`/auth/oauth/{name}/…`). */
  name: string;
  /** "oidc": an OpenID provider, its endpoints read from the issuer's discovery document; "github": GitHub's OAuth 2 and user API. */
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

export const APP_NAME = "Notes API";

/** Secrets a deployment may set but need not (wrangler.toml's `[secrets] required` lists the others). */
export interface OptionalSecrets {
  /** Seals second-factor secrets at rest; without it they are sealed under a key derived from JWT_SECRET_KEY. */
  MFA_ENCRYPTION_KEY?: string;
  /** The MFA_ENCRYPTION_KEY before the last rotation, while boxes sealed under it remain. */
  MFA_ENCRYPTION_KEY_PREVIOUS?: string;
  /**
   * Sign in with Apple's key (PKCS#8 PEM), when `apple` has a web flow. The other providers' secrets,
   * OAUTH_<N>_CLIENT_SECRET, are named after the provider and read by name (oauthProvider).
   */
  OAUTH_APPLE_PRIVATE_KEY?: string;
}

/** A setting that is present but unusable; reported as a 500 with a log line naming it. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

function intSetting(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}`);
  }
  return value;
}

function choice<T extends string>(name: string, raw: string | undefined, allowed: readonly T[], fallback: T): T {
  const value = nonEmpty(raw)?.toLowerCase() ?? fallback;
  if (!allowed.includes(value as T)) throw new ConfigError(`${name} must be one of: ${allowed.join(", ")}`);
  return value as T;
}

function nonEmpty(raw: string | undefined): string | undefined {
  return raw === undefined || raw.trim() === "" ? undefined : raw.trim();
}

function list(raw: string | undefined): string[] {
  return (raw ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/** Issuers that need no OAUTH_<N>_ISSUER; GitHub's web and API addresses, which OAUTH_GITHUB_URL and OAUTH_GITHUB_API_URL replace (tests, GitHub Enterprise). */
export const PRESET_ISSUERS: Readonly<Record<string, string>> = { google: "https://accounts.google.com", apple: "https://appleid.apple.com" };
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
  const ok = url && (url.protocol === "https:" || (url.protocol === "http:" && isLoopback(url.hostname))) && !url.search && !url.hash;
  if (!ok) throw new ConfigError(`${name} must be an https URL (http only on a loopback host), without query or fragment`);
  return raw;
}

/** An app URL a flow may return to: https, http on loopback, or an app's own scheme (`com.example.app:/oauth`); no fragment. */
function redirectUrl(raw: string): string {
  const url = URL.parse(raw);
  const scheme = url?.protocol ?? "";
  const ok = url && !url.hash && !raw.includes("#") && !UNSAFE_SCHEMES.includes(scheme) && (scheme !== "http:" || isLoopback(url.hostname));
  if (!ok) throw new ConfigError(`OAUTH_REDIRECT_URLS: ${raw} is not an https URL, a loopback http URL or an app scheme URL without fragment`);
  return raw;
}

/** A setting whose name is made from a provider's: read from the bindings by name. */
function dynamic(env: object, name: string): string | undefined {
  const value: unknown = Reflect.get(env, name);
  return typeof value === "string" ? nonEmpty(value) : undefined;
}

/** Apple's client secret is a JWT the service signs itself: all three settings, or none (no web flow). */
function appleSecret(env: object): ClientSecret | undefined {
  const [teamId, keyId, pem] = ["OAUTH_APPLE_TEAM_ID", "OAUTH_APPLE_KEY_ID", "OAUTH_APPLE_PRIVATE_KEY"].map((name) => dynamic(env, name));
  if (!teamId && !keyId && !pem) return undefined;
  // A PEM pasted into one line keeps its line breaks as "\n".
  const privateKey = pem?.replace(/\\n/g, "\n");
  if (!teamId || !keyId || !privateKey) throw new ConfigError("OAUTH_APPLE_TEAM_ID, OAUTH_APPLE_KEY_ID and OAUTH_APPLE_PRIVATE_KEY go together: set all three");
  if (!/^-----BEGIN PRIVATE KEY-----\s+[A-Za-z0-9+/=\s]+-----END PRIVATE KEY-----$/.test(privateKey)) {
    throw new ConfigError("OAUTH_APPLE_PRIVATE_KEY must be the PKCS#8 PEM of the key (-----BEGIN PRIVATE KEY-----)");
  }
  return { kind: "apple", teamId, keyId, privateKey };
}

function oauthProvider(env: object, name: string): OAuthProvider {
  if (!/^[a-z0-9]+$/.test(name)) throw new ConfigError(`OAUTH_PROVIDERS: "${name}" must be lowercase letters and digits`);
  const prefix = `OAUTH_${name.toUpperCase()}_`;
  const clientId = dynamic(env, `${prefix}CLIENT_ID`);
  if (!clientId) throw new ConfigError(`${prefix}CLIENT_ID is required for the provider ${name}`);
  const secret = dynamic(env, `${prefix}CLIENT_SECRET`);
  const clientSecret = name === "apple" ? appleSecret(env) : secret === undefined ? undefined : { kind: "static" as const, value: secret };
  const audiences = list(dynamic(env, `${prefix}AUDIENCES`));
  if (name === "github") {
    // GitHub's addresses are bases that paths are appended to.
    const issuer = providerUrl("OAUTH_GITHUB_URL", dynamic(env, "OAUTH_GITHUB_URL") ?? GITHUB_URL).replace(/\/+$/, "");
    const apiUrl = providerUrl("OAUTH_GITHUB_API_URL", dynamic(env, "OAUTH_GITHUB_API_URL") ?? GITHUB_API_URL).replace(/\/+$/, "");
    return { name, protocol: "github", clientId, audiences, issuer, apiUrl, clientSecret };
  }
  const issuer = dynamic(env, `${prefix}ISSUER`) ?? PRESET_ISSUERS[name];
  if (!issuer) throw new ConfigError(`${prefix}ISSUER is required for the OpenID provider ${name}`);
  return { name, protocol: "oidc", clientId, audiences, issuer: providerUrl(`${prefix}ISSUER`, issuer), apiUrl: undefined, clientSecret };
}

/** OAUTH_PROVIDERS and each provider's settings, and OAUTH_REDIRECT_URLS. */
function readOAuth(env: Env): OAuthConfig {
  const names = list(env.OAUTH_PROVIDERS).map((name) => name.toLowerCase());
  if (new Set(names).size !== names.length) throw new ConfigError("OAUTH_PROVIDERS names a provider twice");
  return {
    providers: new Map(names.map((name) => [name, oauthProvider(env, name)])),
    redirectUrls: list(env.OAUTH_REDIRECT_URLS).map(redirectUrl),
  };
}

/** Reads and checks every setting in one place. */
export function readConfig(env: Env & OptionalSecrets): Config {
  const mailEmail = nonEmpty(env.MAIL_EMAIL);
  const mailPassword = nonEmpty(env.MAIL_APP_PASSWORD);
  return {
    bcryptCost: intSetting("BCRYPT_COST", env.BCRYPT_COST, 10, 4, 31),
    jwtSecret: nonEmpty(env.JWT_SECRET_KEY),
    mfaKeys: [nonEmpty(env.MFA_ENCRYPTION_KEY) ?? nonEmpty(env.JWT_SECRET_KEY), nonEmpty(env.MFA_ENCRYPTION_KEY_PREVIOUS)].filter((key) => key !== undefined),
    notesAuth: choice("NOTES_AUTH", env.NOTES_AUTH, ["off", "required"] as const, "off"),
    clientRateLimits: nonEmpty(env.RATE_LIMITS)?.toLowerCase() !== "off",
    notesRequireIfMatch: choice("NOTES_REQUIRE_IF_MATCH", env.NOTES_REQUIRE_IF_MATCH, ["false", "true"] as const, "false") === "true",
    failedCodeHourlyLimit: intSetting("FAILED_CODE_HOURLY_LIMIT", env.FAILED_CODE_HOURLY_LIMIT, 2000, 1, 1_000_000_000),
    mailHourlyLimit: intSetting("MAIL_HOURLY_LIMIT", env.MAIL_HOURLY_LIMIT, 40, 1, 1_000_000_000),
    mailDailyLimit: intSetting("MAIL_DAILY_LIMIT", env.MAIL_DAILY_LIMIT, 240, 1, 1_000_000_000),
    logRequests: choice("LOG_REQUESTS", env.LOG_REQUESTS, ["errors", "all"] as const, "errors"),
    corsOrigins: list(env.CORS_ORIGINS),
    oauth: readOAuth(env),
    smtp:
      mailEmail && mailPassword
        ? {
            host: nonEmpty(env.SMTP_HOST) ?? "smtp.gmail.com",
            port: intSetting("SMTP_PORT", env.SMTP_PORT, 465, 1, 65535),
            secure: (nonEmpty(env.SMTP_SECURE) ?? "true").toLowerCase() !== "false",
            username: mailEmail,
            password: mailPassword,
            fromName: nonEmpty(env.MAIL_FROM_NAME) ?? APP_NAME,
            timeoutMs: intSetting("SMTP_TIMEOUT_MS", env.SMTP_TIMEOUT_MS, 10_000, 100, 60_000),
          }
        : undefined,
  };
}
