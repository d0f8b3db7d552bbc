import type { SmtpSettings } from "../lib/smtp";
import { attachmentSettings, type AttachmentSettings } from "./attachments";
import { appUrl, turnstileOf } from "./web";
import { APP_NAME } from "./names";
import { readOAuth, type OAuthConfig } from "./oauth";
import { choice, ConfigError, group, intSetting, list, nonEmpty, type Unavailable } from "./parse";
import { androidApps, appleApps, webauthnSettings, type AndroidApp, type WebAuthnConfig } from "./passkeys";
import { adminToken, auditRetentionDays, webhooks, type WebhookConfig } from "./operators";

/**
 * Every setting, read and checked in one place (readConfig); the readers of each group of settings are
 * beside this file. A setting that is present but unusable is a ConfigError naming it.
 */

export { APP_NAME, ConfigError };
export type { AndroidApp, AttachmentSettings, OAuthConfig, Unavailable, WebAuthnConfig, WebhookConfig };
export { MIN_ADMIN_TOKEN_CHARS } from "./operators";
export type { ClientSecret, OAuthProvider } from "./oauth";
export { DEV_ORIGIN } from "./passkeys";
export { GITHUB_API_URL, GITHUB_URL, isLoopback, PRESET_ISSUERS } from "./oauth";

/** The mail account: the SMTP conversation's settings, and the sender's display name. */
export type SmtpConfig = SmtpSettings & { fromName: string };

/** LIVE_SOCKETS_PER_ACCOUNT when unset (wrangler.toml sets the same). */
export const LIVE_SOCKETS_PER_ACCOUNT_DEFAULT = 20;

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
  /**
   * Origins allowed cross-origin access (CORS_ORIGINS, comma-separated); empty: none. Also the pages that may open the
   * live socket.
   */
  corsOrigins: string[];
  /** LIVE_SOCKETS_PER_ACCOUNT: live-updates sockets one account may hold open (src/live/); a ticket beyond is a 429. */
  liveSocketsPerAccount: number;
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
  /**
   * Social sign-in (OAUTH_*): the providers by name, and the app URLs a flow may return to; or why it is unavailable.
   */
  oauth: OAuthConfig | Unavailable;
  /** ADMIN_TOKEN: the admin API's Bearer token; undefined: every /admin/* route is a 404. */
  adminToken: string | undefined | Unavailable;
  /** WEBHOOK_*: where events are POSTed, signed with what, which, and how retried; undefined: no webhooks. */
  webhooks: WebhookConfig | undefined | Unavailable;
  /** AUDIT_RETENTION_DAYS: the cron removes older events. */
  auditRetentionDays: number;
  /** ATTACHMENT_*: the largest file, each account's quota, how long a signed link lives (notes/attachments/). */
  attachments: AttachmentSettings;
}

/** Secrets a deployment may set but need not (wrangler.toml's `[secrets] required` lists the others). */
export interface OptionalSecrets {
  /** Seals second-factor secrets at rest; without it they are sealed under a key derived from JWT_SECRET_KEY. */
  MFA_ENCRYPTION_KEY?: string;
  /** The MFA_ENCRYPTION_KEY before the last rotation, while boxes sealed under it remain. */
  MFA_ENCRYPTION_KEY_PREVIOUS?: string;
  /** Cloudflare Turnstile's secret: with it, register, resend and forgot-password need a Turnstile token. */
  TURNSTILE_SECRET_KEY?: string;
  /**
   * Sign in with Apple's key (PKCS#8 PEM), when `apple` has a web flow. The other providers' secrets,
   * OAUTH_<N>_CLIENT_SECRET, are named after the provider and read by name (oauthProvider).
   */
  OAUTH_APPLE_PRIVATE_KEY?: string;
  /** The admin API's Bearer token (at least 32 characters); unset, /admin/* answers 404. */
  ADMIN_TOKEN?: string;
  /** Signs webhooks (Standard Webhooks): `whsec_` and base64; needed with WEBHOOK_URL. */
  WEBHOOK_SECRET?: string;
}

/** A setting that is present but unusable; reported as a 500 with a log line naming it. */

/** Reads and checks every setting in one place. */
export function readConfig(env: Env & OptionalSecrets): Config {
  const mailEmail = nonEmpty(env.MAIL_EMAIL);
  const mailPassword = nonEmpty(env.MAIL_APP_PASSWORD);
  // Sending without AUTH is asked for, never guessed from an empty password: without one no mail is sent.
  const smtpAuth = choice("SMTP_AUTH", env.SMTP_AUTH, ["login", "none"] as const, "login");
  return {
    bcryptCost: intSetting("BCRYPT_COST", env.BCRYPT_COST, 10, 4, 31),
    jwtSecret: nonEmpty(env.JWT_SECRET_KEY),
    mfaKeys: [
      nonEmpty(env.MFA_ENCRYPTION_KEY) ?? nonEmpty(env.JWT_SECRET_KEY),
      nonEmpty(env.MFA_ENCRYPTION_KEY_PREVIOUS),
    ].filter((key) => key !== undefined),
    notesAuth: choice("NOTES_AUTH", env.NOTES_AUTH, ["off", "required"] as const, "off"),
    clientRateLimits: nonEmpty(env.RATE_LIMITS)?.toLowerCase() !== "off",
    notesRequireIfMatch:
      choice("NOTES_REQUIRE_IF_MATCH", env.NOTES_REQUIRE_IF_MATCH, ["false", "true"] as const, "false") === "true",
    failedCodeHourlyLimit: intSetting("FAILED_CODE_HOURLY_LIMIT", env.FAILED_CODE_HOURLY_LIMIT, 2000, 1, 1_000_000_000),
    mailHourlyLimit: intSetting("MAIL_HOURLY_LIMIT", env.MAIL_HOURLY_LIMIT, 40, 1, 1_000_000_000),
    mailDailyLimit: intSetting("MAIL_DAILY_LIMIT", env.MAIL_DAILY_LIMIT, 240, 1, 1_000_000_000),
    mailUnverifiedClientHourlyLimit: intSetting(
      "MAIL_UNVERIFIED_CLIENT_HOURLY_LIMIT",
      env.MAIL_UNVERIFIED_CLIENT_HOURLY_LIMIT,
      10,
      1,
      1_000_000_000,
    ),
    liveSocketsPerAccount: intSetting(
      "LIVE_SOCKETS_PER_ACCOUNT",
      env.LIVE_SOCKETS_PER_ACCOUNT,
      LIVE_SOCKETS_PER_ACCOUNT_DEFAULT,
      1,
      10_000,
    ),
    logRequests: choice("LOG_REQUESTS", env.LOG_REQUESTS, ["errors", "all"] as const, "errors"),
    appUrl: appUrl(env.APP_URL),
    turnstile: turnstileOf(env),
    corsOrigins: list(env.CORS_ORIGINS),
    webauthn: group(() => webauthnSettings(env)),
    androidApps: group(() => androidApps(env.ANDROID_APP_FINGERPRINTS)),
    appleApps: group(() => appleApps(env.APPLE_APP_IDS)),
    oauth: group(() => readOAuth(env)),
    adminToken: group(() => adminToken(env.ADMIN_TOKEN)),
    webhooks: group(() => webhooks(env)),
    auditRetentionDays: auditRetentionDays(env.AUDIT_RETENTION_DAYS),
    attachments: attachmentSettings(env),
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
