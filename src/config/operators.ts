import { isEventType, type EventType } from "../lib/event-types";
import { isLoopback } from "./oauth";
import { ConfigError, intSetting, list, nonEmpty } from "./parse";

/**
 * The settings of the people who run the service: the admin API's token, the audit log's retention, and the
 * webhooks (docs/operations.md, "Operating it").
 */

/** ADMIN_TOKEN's shortest accepted length: a token an attacker cannot guess within the per-client limit. */
export const MIN_ADMIN_TOKEN_CHARS = 32;

/** ADMIN_TOKEN, or undefined when unset (every /admin/* route is then a 404). */
export function adminToken(raw: string | undefined): string | undefined {
  const token = nonEmpty(raw);
  if (token !== undefined && [...token].length < MIN_ADMIN_TOKEN_CHARS)
    throw new ConfigError(`ADMIN_TOKEN must be at least ${MIN_ADMIN_TOKEN_CHARS} characters`);
  return token;
}

/** Where and how events are POSTed. */
export interface WebhookConfig {
  /** WEBHOOK_URL: https, or http on a loopback host. */
  url: string;
  /** WEBHOOK_SECRET's key: the bytes of its base64 after `whsec_` (Standard Webhooks). */
  key: Uint8Array;
  /** WEBHOOK_EVENTS: the event types sent, or "*" for all. */
  events: readonly EventType[] | "*";
  /** WEBHOOK_RETRY_BASE_SECONDS: the first retry's delay; each next one doubles it. */
  retryBaseSeconds: number;
}

/** The secret's key length Standard Webhooks' libraries generate and accept. */
const SECRET_BYTES = { min: 24, max: 64 };

function webhookKey(raw: string | undefined): Uint8Array {
  const secret = nonEmpty(raw);
  const base64 = secret?.startsWith("whsec_") ? secret.slice("whsec_".length) : undefined;
  let key: Uint8Array | undefined;
  if (base64 !== undefined && /^[A-Za-z0-9+/]+={0,2}$/.test(base64) && base64.length % 4 === 0)
    key = Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
  if (!key || key.length < SECRET_BYTES.min || key.length > SECRET_BYTES.max)
    throw new ConfigError(
      `WEBHOOK_SECRET must be whsec_ followed by ${SECRET_BYTES.min} to ${SECRET_BYTES.max} bytes in base64 (Standard Webhooks)`,
    );
  return key;
}

function webhookEvents(raw: string | undefined): readonly EventType[] | "*" {
  const names = list(raw);
  if (names.length === 0 || (names.length === 1 && names[0] === "*")) return "*";
  const unknown = names.filter((name) => !isEventType(name));
  if (unknown.length > 0)
    throw new ConfigError(
      `WEBHOOK_EVENTS must be * or event types separated by commas; unknown: ${unknown.join(", ")}`,
    );
  return names.filter(isEventType);
}

/** The webhook settings, or undefined when WEBHOOK_URL is unset (no webhooks). */
export function webhooks(env: Env & { WEBHOOK_SECRET?: string }): WebhookConfig | undefined {
  const raw = nonEmpty(env.WEBHOOK_URL);
  if (raw === undefined) return undefined;
  const url = URL.parse(raw);
  if (!url || !(url.protocol === "https:" || (url.protocol === "http:" && isLoopback(url.hostname))) || url.hash)
    throw new ConfigError("WEBHOOK_URL must be an https URL (http only on a loopback host), without a fragment");
  return {
    url: url.href,
    key: webhookKey(env.WEBHOOK_SECRET),
    events: webhookEvents(env.WEBHOOK_EVENTS),
    retryBaseSeconds: intSetting("WEBHOOK_RETRY_BASE_SECONDS", env.WEBHOOK_RETRY_BASE_SECONDS, 30, 1, 86_400),
  };
}

/** AUDIT_RETENTION_DAYS: how long events are kept. */
export function auditRetentionDays(raw: string | undefined): number {
  return intSetting("AUDIT_RETENTION_DAYS", raw, 90, 1, 36_500);
}
