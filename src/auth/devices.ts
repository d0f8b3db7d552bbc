import { macKey, randomId } from "../lib/crypto";
import { base64url, fromBase64url } from "../lib/encoding";
import { DAY, SECOND } from "../lib/units";

/**
 * Device tokens (OWASP's "device cookies"): a device that has logged in to an address holds a token that
 * lets it be judged on its own failed logins rather than on the address's, so an attacker who locks the
 * address does not lock its owner out of the devices they use.
 *
 * A token is `<device id>.<expiry>.<MAC>`: a random device id (128 bits, base64url), its expiry in seconds
 * since the epoch, and an HMAC-SHA-256 of both, the normalized address and the account's password hash,
 * under a key derived from JWT_SECRET_KEY for this purpose alone. Nothing is stored when one is issued:
 * the MAC proves that we issued it, to this address, while it had this password. A new password (reset or
 * change) ends every device token of the account, so tokens gathered by someone who once knew the old
 * password give no guesses at the new one. The only state is a device's run of failed logins
 * (`device_login_failures`, keyed by the device id), which exists only after a failure. A token of another
 * address, an expired, forged or garbled one, or one from before the password changed, counts for nothing:
 * the login is judged as if it had none.
 */

/** A device token is good for this long after the login that issued it; each login renews it. */
export const DEVICE_TOKEN_TTL_SECONDS = (180 * DAY) / SECOND;

const PURPOSE = "notes-api device token v1";
const DEVICE_TOKEN = /^([A-Za-z0-9_-]{22})\.([1-9][0-9]{0,11})\.([A-Za-z0-9_-]{43})$/;
const encoder = new TextEncoder();

function payload(deviceId: string, expiresAt: number, email: string, passwordHash: string): Uint8Array {
  // The device id, the expiry and a bcrypt hash have fixed alphabets without "\n": the parts cannot run together.
  return encoder.encode(`${deviceId}\n${expiresAt}\n${passwordHash}\n${email}`);
}

/** A token for the device `deviceId` (a new device when absent), the normalized address `email` and its password hash. */
export async function issueDeviceToken(secret: string, email: string, passwordHash: string, nowMs: number, deviceId = randomId()): Promise<string> {
  const expiresAt = Math.floor(nowMs / 1000) + DEVICE_TOKEN_TTL_SECONDS;
  const mac = await crypto.subtle.sign("HMAC", await macKey(secret, PURPOSE), payload(deviceId, expiresAt, email, passwordHash));
  return `${deviceId}.${expiresAt}.${base64url(new Uint8Array(mac))}`;
}

/**
 * Whether `token` has the shape of a device token that has not expired, in the one spelling we issue
 * (base64url's last character carries unused bits): only then is the account's hash worth reading.
 */
export function maybeDeviceToken(token: unknown, nowMs: number): token is string {
  if (typeof token !== "string") return false;
  const match = DEVICE_TOKEN.exec(token);
  if (!match || Number(match[2]) * 1000 <= nowMs) return false;
  const [deviceId, mac] = [match[1]!, match[3]!];
  return base64url(fromBase64url(deviceId)) === deviceId && base64url(fromBase64url(mac)) === mac;
}

/**
 * The device id of a token we issued to `email` while its password hash was `passwordHash`, that has not
 * expired; undefined for anything else, including a value that is not a string at all, and for an
 * address without an account (no hash).
 */
export async function readDeviceToken(
  token: unknown,
  email: string,
  passwordHash: string | undefined,
  secret: string,
  nowMs: number,
): Promise<string | undefined> {
  if (passwordHash === undefined || !maybeDeviceToken(token, nowMs)) return undefined;
  const [deviceId, expiry, mac] = token.split(".") as [string, string, string];
  // HMAC verification compares in constant time.
  const valid = await crypto.subtle.verify("HMAC", await macKey(secret, PURPOSE), fromBase64url(mac), payload(deviceId, Number(expiry), email, passwordHash));
  return valid ? deviceId : undefined;
}
