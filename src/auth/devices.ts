import { base64url, fromBase64url, macKey, newSessionId } from "../lib/tokens";

/**
 * Device tokens (OWASP's "device cookies"): a device that has logged in to an address holds a token that
 * lets it be judged on its own failed logins rather than on the address's, so an attacker who locks the
 * address does not lock its owner out of the devices they use.
 *
 * A token is `<device id>.<expiry>.<MAC>`: a random device id (128 bits, base64url), its expiry in seconds
 * since the epoch, and an HMAC-SHA-256 of both and the normalized address, under a key derived from
 * JWT_SECRET_KEY for this purpose alone. Nothing is stored when one is issued: the MAC proves that we
 * issued it, to this address. The only state is a device's run of failed logins (`device_login_failures`,
 * keyed by the device id), which exists only after a failure. A token of another address, an expired,
 * forged or garbled one counts for nothing: the login is judged as if it had none.
 */

/** A device token is good for this long after the login that issued it; each login renews it. */
export const DEVICE_TOKEN_TTL_SECONDS = 180 * 24 * 60 * 60;

const PURPOSE = "notes-api device token v1";
const DEVICE_TOKEN = /^([A-Za-z0-9_-]{22})\.([1-9][0-9]{0,11})\.([A-Za-z0-9_-]{43})$/;
const encoder = new TextEncoder();

function payload(deviceId: string, expiresAt: number, email: string): Uint8Array {
  // The device id and the expiry have fixed alphabets without "\n", so the three parts cannot run together.
  return encoder.encode(`${deviceId}\n${expiresAt}\n${email}`);
}

/** A token for the device `deviceId` (a new device when absent) and the normalized address `email`. */
export async function issueDeviceToken(secret: string, email: string, nowMs: number, deviceId = newSessionId()): Promise<string> {
  const expiresAt = Math.floor(nowMs / 1000) + DEVICE_TOKEN_TTL_SECONDS;
  const mac = await crypto.subtle.sign("HMAC", await macKey(secret, PURPOSE), payload(deviceId, expiresAt, email));
  return `${deviceId}.${expiresAt}.${base64url(new Uint8Array(mac))}`;
}

/**
 * The device id of a token we issued to `email` that has not expired; undefined for anything else,
 * including a value that is not a string at all. Only the one spelling we issue is accepted (base64url's
 * last character carries unused bits).
 */
export async function readDeviceToken(token: unknown, email: string, secret: string, nowMs: number): Promise<string | undefined> {
  if (typeof token !== "string") return undefined;
  const match = DEVICE_TOKEN.exec(token);
  if (!match) return undefined;
  const deviceId = match[1]!;
  const expiresAt = Number(match[2]);
  const mac = match[3]!;
  if (expiresAt * 1000 <= nowMs) return undefined;
  const macBytes = fromBase64url(mac);
  if (base64url(macBytes) !== mac || base64url(fromBase64url(deviceId)) !== deviceId) return undefined;
  // HMAC verification compares in constant time.
  const valid = await crypto.subtle.verify("HMAC", await macKey(secret, PURPOSE), macBytes, payload(deviceId, expiresAt, email));
  return valid ? deviceId : undefined;
}
