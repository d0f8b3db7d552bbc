import { APP_NAME } from "./names";
import { ConfigError, list, nonEmpty } from "./parse";

/** The passkey settings (auth/passkeys/): the relying party, and the native apps that may use its passkeys. */

/** The WebAuthn relying party this deployment is (auth/passkeys/). */
export interface WebAuthnConfig {
  /** WEBAUTHN_RP_ID: the registrable domain every passkey is bound to (`localhost` in development). */
  rpId: string;
  /** WEBAUTHN_RP_NAME: the name authenticators show; MAIL_FROM_NAME's value by default. */
  rpName: string;
  /**
   * WEBAUTHN_ORIGINS: the origins accepted in clientDataJSON (web origins, and native apps' `android:apk-key-hash:…`).
   */
  origins: string[];
}

/**
 * An Android app allowed to use this domain's passkeys: its package and its signing certificates' SHA-256 fingerprints.
 */
export interface AndroidApp {
  packageName: string;
  /** `AB:CD:…`, 32 bytes in upper-case hex. */
  fingerprints: string[];
}

const DNS_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const FINGERPRINT = /^[0-9A-F]{2}(?::[0-9A-F]{2}){31}$/;
const ANDROID_PACKAGE = /^[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)+$/;
const APPLE_APP_ID = /^[A-Z0-9]{10}\.[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*$/;
const APK_KEY_HASH = /^android:apk-key-hash:[A-Za-z0-9_-]{43}$/;

/** ANDROID_APP_FINGERPRINTS: `package:SHA256_FINGERPRINT,…`, grouped by package. */
export function androidApps(raw: string | undefined): AndroidApp[] {
  const apps = new Map<string, string[]>();
  for (const item of list(raw)) {
    const at = item.indexOf(":");
    const [packageName, fingerprint] = [item.slice(0, at), item.slice(at + 1).toUpperCase()];
    if (at < 0 || !ANDROID_PACKAGE.test(packageName) || !FINGERPRINT.test(fingerprint)) {
      throw new ConfigError(
        `ANDROID_APP_FINGERPRINTS: "${item}" is not package:SHA256_FINGERPRINT (com.example.app:AB:CD:… with 32 hex pairs)`,
      );
    }
    apps.set(packageName, [...(apps.get(packageName) ?? []), fingerprint]);
  }
  return [...apps].map(([packageName, fingerprints]) => ({ packageName, fingerprints }));
}

export function appleApps(raw: string | undefined): string[] {
  const ids = list(raw);
  const wrong = ids.find((id) => !APPLE_APP_ID.test(id));
  if (wrong)
    throw new ConfigError(
      `APPLE_APP_IDS: "${wrong}" is not TEAMID.bundle.id (a 10-character team id, a dot, the bundle id)`,
    );
  return ids;
}

/** The origin Android apps signed with `fingerprint` put in clientDataJSON. */
function apkKeyHash(fingerprint: string): string {
  const bytes = Uint8Array.from(fingerprint.split(":"), (pair) => Number.parseInt(pair, 16));
  return `android:apk-key-hash:${btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "")}`;
}

/** A web origin of the relying party (https on the RP ID or a subdomain; http only on localhost), or a native app's. */
function acceptableOrigin(origin: string, rpId: string): boolean {
  if (APK_KEY_HASH.test(origin)) return true;
  const url = URL.parse(origin);
  if (!url || url.origin !== origin) return false;
  const ofRp = url.hostname === rpId || url.hostname.endsWith(`.${rpId}`);
  return ofRp && (url.protocol === "https:" || (url.protocol === "http:" && rpId === "localhost"));
}

export function webauthnSettings(env: Env): WebAuthnConfig {
  const rpId = nonEmpty(env.WEBAUTHN_RP_ID);
  if (!rpId) throw new ConfigError("WEBAUTHN_RP_ID is not set");
  if (!DNS_NAME.test(rpId) || /^[0-9.]+$/.test(rpId)) {
    throw new ConfigError(
      "WEBAUTHN_RP_ID must be a domain name in lower case (example.com), without scheme, port or path",
    );
  }
  const fallback =
    rpId === "localhost"
      ? [DEV_ORIGIN]
      : [
          `https://${rpId}`,
          ...androidApps(env.ANDROID_APP_FINGERPRINTS).flatMap((app) => app.fingerprints.map(apkKeyHash)),
        ];
  const origins = env.WEBAUTHN_ORIGINS?.trim() ? list(env.WEBAUTHN_ORIGINS) : fallback;
  const wrong = origins.find((origin) => !acceptableOrigin(origin, rpId));
  if (wrong)
    throw new ConfigError(
      `WEBAUTHN_ORIGINS: "${wrong}" is not https://${rpId} or one of its subdomains (http only for localhost), nor android:apk-key-hash:…`,
    );
  return { rpId, rpName: nonEmpty(env.WEBAUTHN_RP_NAME) ?? nonEmpty(env.MAIL_FROM_NAME) ?? APP_NAME, origins };
}

/** `npm run dev`'s origin: WEBAUTHN_ORIGINS's default when WEBAUTHN_RP_ID is localhost. */
export const DEV_ORIGIN = "http://localhost:8787";
