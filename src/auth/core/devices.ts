import type { Context } from "hono";
import { macKey, randomId } from "../../lib/crypto";
import { base64url, fromBase64url } from "../../lib/encoding";
import { SECOND } from "../../lib/units";
import type { AppEnv } from "../../types";
import { jwtSecretOf } from "../caller";
import { claimWindow } from "../limits/windows";
import { DEVICE_TOKEN_TTL_SECONDS, STALE_DEVICE_FAILURES_PER_HOUR, STALE_DEVICE_OWN_TRY_MS } from "../policy";
import { deviceAccount } from "./accounts";

/**
 * Device tokens (OWASP's "device cookies"): a device that has signed in to an account holds a token that
 * lets it be judged on its own failed logins rather than on the address's, so an attacker who locks the
 * address does not lock its owner out of the devices they use.
 *
 * A token is `<device id>.<expiry>.<MAC>`: a random device id (128 bits, base64url), its expiry in seconds
 * since the epoch, and an HMAC-SHA-256 of both and the account (its id and normalized address), under a
 * key derived from JWT_SECRET_KEY for this purpose alone. Nothing is stored when one is issued: the MAC
 * proves that we issued it, to this account. It marks a device, not a password: it survives a password
 * change or reset, so the owner's devices are never thrown back onto the address's lock. But a token
 * issued before the last password change (a *stale* one) may have been gathered by someone who knew the
 * old password, one per login: stale tokens of an account share one small allowance of failures
 * (STALE_DEVICE_FAILURES_PER_HOUR, claimed in the login), past which they count for nothing. The only
 * other state is a device's run of failed logins (`device_login_failures`, keyed by the device id), which
 * exists only after a failure. A token of another account, an expired, forged or garbled one, counts for
 * nothing: the login is judged as if it had none. Any way of signing in issues one (it marks the device,
 * whatever proved the user), and a successful sign-in renews a stale token.
 */

/** The deployment window (limits/windows.ts) of the failed logins of an account's stale device tokens. */
export const staleDevicesWindow = (userId: number) => `stale_device_failures:${userId}`;

/** The window of a stale token's own try (STALE_DEVICE_OWN_TRY_MS): one, judged on its device alone. */
export const staleOwnTryWindow = (deviceId: string) => `stale_device_own_try:${deviceId}`;

/** The account a device token is bound to. */
export interface DeviceAccount {
  id: number;
  email: string;
}

/** A device of a valid token: its id, and when the token was issued (seconds since the epoch). */
export interface Device {
  id: string;
  issuedAt: number;
}

const PURPOSE = "notes-api device token v3";
const DEVICE_TOKEN = /^([A-Za-z0-9_-]{22})\.([1-9][0-9]{0,11})\.([A-Za-z0-9_-]{43})$/;
const encoder = new TextEncoder();

function payload(deviceId: string, expiresAt: number, account: DeviceAccount): Uint8Array {
  // The device id, the expiry and the account id have fixed alphabets without "\n": the parts cannot run together.
  return encoder.encode(`${deviceId}\n${expiresAt}\n${account.id}\n${account.email}`);
}

/** A token for the device `deviceId` (a new device when absent) of `account`. */
export async function issueDeviceToken(
  secret: string,
  account: DeviceAccount,
  nowMs: number,
  deviceId = randomId(),
): Promise<string> {
  const expiresAt = Math.floor(nowMs / 1000) + DEVICE_TOKEN_TTL_SECONDS;
  const mac = await crypto.subtle.sign("HMAC", await macKey(secret, PURPOSE), payload(deviceId, expiresAt, account));
  return `${deviceId}.${expiresAt}.${base64url(new Uint8Array(mac))}`;
}

/**
 * Whether `token` has the shape of a device token that has not expired, in the one spelling we issue
 * (base64url's last character carries unused bits): only then is the account worth reading.
 */
export function maybeDeviceToken(token: unknown, nowMs: number): token is string {
  if (typeof token !== "string") return false;
  const match = DEVICE_TOKEN.exec(token);
  if (!match || Number(match[2]) * 1000 <= nowMs) return false;
  const [deviceId, mac] = [match[1]!, match[3]!];
  return base64url(fromBase64url(deviceId)) === deviceId && base64url(fromBase64url(mac)) === mac;
}

/**
 * The device of a token we issued to `account` that has not expired; undefined for anything else,
 * including a value that is not a string at all, and for an address without an account.
 */
export async function readDeviceToken(
  token: unknown,
  account: DeviceAccount | undefined,
  secret: string,
  nowMs: number,
): Promise<Device | undefined> {
  if (account === undefined || !maybeDeviceToken(token, nowMs)) return undefined;
  const [deviceId, expiry, mac] = token.split(".") as [string, string, string];
  // HMAC verification compares in constant time.
  const valid = await crypto.subtle.verify(
    "HMAC",
    await macKey(secret, PURPOSE),
    fromBase64url(mac),
    payload(deviceId, Number(expiry), account),
  );
  return valid ? { id: deviceId, issuedAt: Number(expiry) - DEVICE_TOKEN_TTL_SECONDS } : undefined;
}

/** A slot a stale device token's login claimed (a window's name and start), to give back. */
export type StaleSlot = { window: string; windowStart: number };

/**
 * The device a login is judged on: the device of a valid device token of the address's account (only a
 * login that sends something shaped like one reads the account first). A stale token (issued before the
 * last password change) first claims its own try (one per STALE_DEVICE_OWN_TRY_MS, outside what other
 * tokens spend), else a slot of the account's stale-device allowance, given back by a right password or a
 * refusal of the device's own lock; with neither it counts for nothing (see devices.ts).
 */
export async function loginDevice(
  c: Context<AppEnv>,
  email: string,
  token: unknown,
  now: number,
): Promise<{ id: string; stale?: StaleSlot } | undefined> {
  if (!maybeDeviceToken(token, now)) return undefined;
  const { db } = c.var;
  const account = await deviceAccount(db, email);
  const device = await readDeviceToken(token, account, jwtSecretOf(c), now);
  if (!device || !account) return undefined;
  // Token expiries have whole seconds: a token of the very second of the change counts as issued after it.
  if (device.issuedAt >= Math.floor(account.passwordChangedAt / SECOND)) return { id: device.id };
  const [own, shared] = [staleOwnTryWindow(device.id), staleDevicesWindow(account.id)];
  // Its own try first, and only without it the shared allowance: the own try never holds a slot others could use.
  const [ownTry] = await claimWindow(db, own, 1, now, STALE_DEVICE_OWN_TRY_MS);
  if (ownTry) return { id: device.id, stale: { window: own, windowStart: ownTry.windowStart } };
  const [slot] = await claimWindow(db, shared, STALE_DEVICE_FAILURES_PER_HOUR, now);
  return slot ? { id: device.id, stale: { window: shared, windowStart: slot.windowStart } } : undefined;
}
