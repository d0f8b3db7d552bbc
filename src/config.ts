export interface SmtpConfig {
  host: string;
  port: number;
  /** true: TLS from the first byte; false: plain, upgraded with STARTTLS when offered. */
  secure: boolean;
  /** MAIL_EMAIL: the SMTP user name and the From address. */
  username: string;
  password: string;
  /** SMTP_AUTH: "login" signs in with MAIL_EMAIL and MAIL_APP_PASSWORD; "none" sends without AUTH. */
  auth: "login" | "none";
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
  /** Undefined when MAIL_EMAIL is missing, or MAIL_APP_PASSWORD unless SMTP_AUTH=none: no mail is sent. */
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
  /** MAIL_UNVERIFIED_CLIENT_HOURLY_LIMIT: mails to unverified addresses one client may cause in an hour. */
  mailUnverifiedClientHourlyLimit: number;
  /** Origins allowed cross-origin access (CORS_ORIGINS, comma-separated); empty: none. */
  corsOrigins: string[];
  /**
   * APP_URL: the app's own web address (no trailing slash), for the links in mails: a reset mail links to
   * `<APP_URL>/reset-password?…`, an e-mail change notice to `<APP_URL>/revert-email-change?…`. Undefined:
   * reset mails carry the code and request id only, and the notice links to the API's own page.
   */
  appUrl: string | undefined;
  /**
   * Cloudflare Turnstile, when TURNSTILE_SECRET_KEY is set: the secret, and where tokens are checked
   * (TURNSTILE_VERIFY_URL, Cloudflare's siteverify unless set). Undefined: no Turnstile.
   */
  turnstile: { secret: string; verifyUrl: string } | undefined;
  /**
   * LOG_REQUESTS: which answers get a `request` log line. "errors" (the default): those with a status of 400
   * or more; "all": every answer. Workers Logs records every invocation (method, URL, status, time) anyway.
   */
  logRequests: "errors" | "all";
  /** Passkeys' relying party, or why passkeys are unavailable (WEBAUTHN_RP_ID unset, or a setting unusable). */
  webauthn: WebAuthnConfig | Unavailable;
  /** ANDROID_APP_FINGERPRINTS, for /.well-known/assetlinks.json: empty when unset. */
  androidApps: AndroidApp[] | Unavailable;
  /** APPLE_APP_IDS (`TEAMID.bundle.id`), for /.well-known/apple-app-site-association: empty when unset. */
  appleApps: string[] | Unavailable;
}

/** The WebAuthn relying party this deployment is (auth/passkeys/). */
export interface WebAuthnConfig {
  /** WEBAUTHN_RP_ID: the registrable domain every passkey is bound to (`localhost` in development). */
  rpId: string;
  /** WEBAUTHN_RP_NAME: the name authenticators show; MAIL_FROM_NAME's value by default. */
  rpName: string;
  /** WEBAUTHN_ORIGINS: the origins accepted in clientDataJSON (web origins, and native apps' `android:apk-key-hash:…`). */
  origins: string[];
}

/** An Android app allowed to use this domain's passkeys: its package and its signing certificates' SHA-256 fingerprints. */
export interface AndroidApp {
  packageName: string;
  /** `AB:CD:…`, 32 bytes in upper-case hex. */
  fingerprints: string[];
}

/** A group of settings that cannot be used, and why: only what depends on it is refused (never the whole API). */
export interface Unavailable {
  problem: string;
}

export const APP_NAME = "Notes API";

/** Secrets a deployment may set but need not (wrangler.toml's `[secrets] required` lists the others). */
export interface OptionalSecrets {
  /** Seals second-factor secrets at rest; without it they are sealed under a key derived from JWT_SECRET_KEY. */
  MFA_ENCRYPTION_KEY?: string;
  /** The MFA_ENCRYPTION_KEY before the last rotation, while boxes sealed under it remain. */
  MFA_ENCRYPTION_KEY_PREVIOUS?: string;
  /** Cloudflare Turnstile's secret: with it, register, resend and forgot-password need a Turnstile token. */
  TURNSTILE_SECRET_KEY?: string;
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

/** An absolute http(s) URL without a query, fragment or trailing slash, or undefined when unset. */
function appUrl(raw: string | undefined): string | undefined {
  const value = nonEmpty(raw);
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError("APP_URL must be an absolute http(s) URL");
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || url.search !== "" || url.hash !== "") {
    throw new ConfigError("APP_URL must be an absolute http(s) URL without a query or fragment");
  }
  return value.replace(/\/+$/, "");
}

/** Turnstile's siteverify endpoint. */
const TURNSTILE_VERIFY_URL = "https://challenges.cloudflare.com/turnstile/v0/siteverify";

function turnstileOf(env: Env & OptionalSecrets): Config["turnstile"] {
  const secret = nonEmpty(env.TURNSTILE_SECRET_KEY);
  if (secret === undefined) return undefined;
  const verifyUrl = nonEmpty(env.TURNSTILE_VERIFY_URL) ?? TURNSTILE_VERIFY_URL;
  if (!URL.canParse(verifyUrl)) throw new ConfigError("TURNSTILE_VERIFY_URL must be an absolute URL");
  return { secret, verifyUrl };
}

function list(raw: string | undefined): string[] {
  return (raw ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/** The group `read` reads, or its problem: a ConfigError there refuses only what uses the group. */
function group<T>(read: () => T): T | Unavailable {
  try {
    return read();
  } catch (err) {
    if (err instanceof ConfigError) return { problem: err.message };
    throw err;
  }
}

const DNS_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const FINGERPRINT = /^[0-9A-F]{2}(?::[0-9A-F]{2}){31}$/;
const ANDROID_PACKAGE = /^[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)+$/;
const APPLE_APP_ID = /^[A-Z0-9]{10}\.[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*$/;
const APK_KEY_HASH = /^android:apk-key-hash:[A-Za-z0-9_-]{43}$/;

/** ANDROID_APP_FINGERPRINTS: `package:SHA256_FINGERPRINT,…`, grouped by package. */
function androidApps(raw: string | undefined): AndroidApp[] {
  const apps = new Map<string, string[]>();
  for (const item of list(raw)) {
    const at = item.indexOf(":");
    const [packageName, fingerprint] = [item.slice(0, at), item.slice(at + 1).toUpperCase()];
    if (at < 0 || !ANDROID_PACKAGE.test(packageName) || !FINGERPRINT.test(fingerprint)) {
      throw new ConfigError(`ANDROID_APP_FINGERPRINTS: "${item}" is not package:SHA256_FINGERPRINT (com.example.app:AB:CD:… with 32 hex pairs)`);
    }
    apps.set(packageName, [...(apps.get(packageName) ?? []), fingerprint]);
  }
  return [...apps].map(([packageName, fingerprints]) => ({ packageName, fingerprints }));
}

function appleApps(raw: string | undefined): string[] {
  const ids = list(raw);
  const wrong = ids.find((id) => !APPLE_APP_ID.test(id));
  if (wrong) throw new ConfigError(`APPLE_APP_IDS: "${wrong}" is not TEAMID.bundle.id (a 10-character team id, a dot, the bundle id)`);
  return ids;
}

/** The origin Android apps signed with `fingerprint` put in clientDataJSON. */
function apkKeyHash(fingerprint: string): string {
  const bytes = Uint8Array.from(fingerprint.split(":"), (pair) => Number.parseInt(pair, 16));
  return `android:apk-key-hash:${btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}

/** A web origin of the relying party (https on the RP ID or a subdomain; http only on localhost), or a native app's. */
function acceptableOrigin(origin: string, rpId: string): boolean {
  if (APK_KEY_HASH.test(origin)) return true;
  const url = URL.parse(origin);
  if (!url || url.origin !== origin) return false;
  const ofRp = url.hostname === rpId || url.hostname.endsWith(`.${rpId}`);
  return ofRp && (url.protocol === "https:" || (url.protocol === "http:" && rpId === "localhost"));
}

function webauthnSettings(env: Env): WebAuthnConfig {
  const rpId = nonEmpty(env.WEBAUTHN_RP_ID);
  if (!rpId) throw new ConfigError("WEBAUTHN_RP_ID is not set");
  if (!DNS_NAME.test(rpId) || /^[0-9.]+$/.test(rpId)) {
    throw new ConfigError("WEBAUTHN_RP_ID must be a domain name in lower case (example.com), without scheme, port or path");
  }
  const fallback = rpId === "localhost" ? [DEV_ORIGIN] : [`https://${rpId}`, ...androidApps(env.ANDROID_APP_FINGERPRINTS).flatMap((app) => app.fingerprints.map(apkKeyHash))];
  const origins = env.WEBAUTHN_ORIGINS?.trim() ? list(env.WEBAUTHN_ORIGINS) : fallback;
  const wrong = origins.find((origin) => !acceptableOrigin(origin, rpId));
  if (wrong) throw new ConfigError(`WEBAUTHN_ORIGINS: "${wrong}" is not https://${rpId} or one of its subdomains (http only for localhost), nor android:apk-key-hash:…`);
  return { rpId, rpName: nonEmpty(env.WEBAUTHN_RP_NAME) ?? nonEmpty(env.MAIL_FROM_NAME) ?? APP_NAME, origins };
}

/** `npm run dev`'s origin: WEBAUTHN_ORIGINS's default when WEBAUTHN_RP_ID is localhost. */
export const DEV_ORIGIN = "http://localhost:8787";

/** Reads and checks every setting in one place. */
export function readConfig(env: Env & OptionalSecrets): Config {
  const mailEmail = nonEmpty(env.MAIL_EMAIL);
  const mailPassword = nonEmpty(env.MAIL_APP_PASSWORD);
  // Sending without AUTH is asked for, never guessed from an empty password: without one no mail is sent.
  const smtpAuth = choice("SMTP_AUTH", env.SMTP_AUTH, ["login", "none"] as const, "login");
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
    mailUnverifiedClientHourlyLimit: intSetting("MAIL_UNVERIFIED_CLIENT_HOURLY_LIMIT", env.MAIL_UNVERIFIED_CLIENT_HOURLY_LIMIT, 10, 1, 1_000_000_000),
    logRequests: choice("LOG_REQUESTS", env.LOG_REQUESTS, ["errors", "all"] as const, "errors"),
    appUrl: appUrl(env.APP_URL),
    turnstile: turnstileOf(env),
    corsOrigins: list(env.CORS_ORIGINS),
    webauthn: group(() => webauthnSettings(env)),
    androidApps: group(() => androidApps(env.ANDROID_APP_FINGERPRINTS)),
    appleApps: group(() => appleApps(env.APPLE_APP_IDS)),
    smtp:
      mailEmail && (mailPassword || smtpAuth === "none")
        ? {
            host: nonEmpty(env.SMTP_HOST) ?? "smtp.gmail.com",
            port: intSetting("SMTP_PORT", env.SMTP_PORT, 465, 1, 65535),
            secure: (nonEmpty(env.SMTP_SECURE) ?? "true").toLowerCase() !== "false",
            username: mailEmail,
            password: mailPassword ?? "",
            auth: smtpAuth,
            fromName: nonEmpty(env.MAIL_FROM_NAME) ?? APP_NAME,
            timeoutMs: intSetting("SMTP_TIMEOUT_MS", env.SMTP_TIMEOUT_MS, 10_000, 100, 60_000),
          }
        : undefined,
  };
}
