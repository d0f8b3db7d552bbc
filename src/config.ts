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
  /** Origins allowed cross-origin access (CORS_ORIGINS, comma-separated); empty: none. Also the pages that may open the live socket. */
  corsOrigins: string[];
  /** LIVE_SOCKETS_PER_ACCOUNT: live-updates sockets one account may hold open (src/live/); a ticket beyond is a 429. */
  liveSocketsPerAccount: number;
  /**
   * LOG_REQUESTS: which answers get a `request` log line. "errors" (the default): those with a status of 400
   * or more; "all": every answer. Workers Logs records every invocation (method, URL, status, time) anyway.
   */
  logRequests: "errors" | "all";
}

export const APP_NAME = "Notes API";

/** Secrets a deployment may set but need not (wrangler.toml's `[secrets] required` lists the others). */
export interface OptionalSecrets {
  /** Seals second-factor secrets at rest; without it they are sealed under a key derived from JWT_SECRET_KEY. */
  MFA_ENCRYPTION_KEY?: string;
  /** The MFA_ENCRYPTION_KEY before the last rotation, while boxes sealed under it remain. */
  MFA_ENCRYPTION_KEY_PREVIOUS?: string;
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
    liveSocketsPerAccount: intSetting("LIVE_SOCKETS_PER_ACCOUNT", env.LIVE_SOCKETS_PER_ACCOUNT, 20, 1, 10_000),
    logRequests: choice("LOG_REQUESTS", env.LOG_REQUESTS, ["errors", "all"] as const, "errors"),
    corsOrigins: (env.CORS_ORIGINS ?? "")
      .split(",")
      .map((origin) => origin.trim())
      .filter((origin) => origin !== ""),
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
