/**
 * TOTP (RFC 6238) over HOTP (RFC 4226) with WebCrypto: HMAC-SHA-1, 6 digits, 30-second steps, which is
 * what every authenticator app reads from an `otpauth://` URI. Secrets are 160 random bits, shown to the
 * user in base32 (RFC 4648, no padding).
 */

export const TOTP_DIGITS = 6;
export const TOTP_STEP_SECONDS = 30;
/** Steps of clock drift accepted either side of the current one. */
export const TOTP_DRIFT_STEPS = 1;
export const TOTP_SECRET_BYTES = 20;

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

export function base32Encode(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

export function base32Decode(text: string): Uint8Array {
  const clean = text.replace(/=+$/, "").toUpperCase();
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const char of clean) {
    const index = BASE32.indexOf(char);
    if (index < 0) throw new Error("not base32");
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Uint8Array.from(out);
}

export function newTotpSecret(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(TOTP_SECRET_BYTES));
}

/** The HOTP value of `counter` (RFC 4226 §5.3), as `digits` decimal digits. */
export async function hotp(
  secret: Uint8Array,
  counter: number,
  digits = TOTP_DIGITS,
  hash: "SHA-1" | "SHA-256" | "SHA-512" = "SHA-1",
): Promise<string> {
  const key = await crypto.subtle.importKey("raw", secret, { name: "HMAC", hash }, false, ["sign"]);
  const message = new DataView(new ArrayBuffer(8));
  message.setUint32(0, Math.floor(counter / 2 ** 32));
  message.setUint32(4, counter >>> 0);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, message));
  const offset = mac[mac.length - 1]! & 15;
  const binary = ((mac[offset]! & 0x7f) << 24) | (mac[offset + 1]! << 16) | (mac[offset + 2]! << 8) | mac[offset + 3]!;
  return String(binary % 10 ** digits).padStart(digits, "0");
}

/** The time step of a moment (milliseconds since the epoch). */
export function stepAt(nowMs: number): number {
  return Math.floor(nowMs / 1000 / TOTP_STEP_SECONDS);
}

export function totpAt(secret: Uint8Array, step: number): Promise<string> {
  return hotp(secret, step);
}

/**
 * The step whose code `code` is, within TOTP_DRIFT_STEPS of now, or undefined. Every candidate is computed
 * and compared in full, so the time taken does not depend on where (or whether) the code matched.
 */
export async function matchingStep(secret: Uint8Array, code: string, nowMs: number): Promise<number | undefined> {
  if (!/^\d{6}$/.test(code)) return undefined;
  const now = stepAt(nowMs);
  let found: number | undefined;
  for (let step = now - TOTP_DRIFT_STEPS; step <= now + TOTP_DRIFT_STEPS; step++) {
    const expected = await totpAt(secret, step);
    let difference = 0;
    for (let i = 0; i < TOTP_DIGITS; i++) difference |= expected.charCodeAt(i) ^ code.charCodeAt(i);
    if (difference === 0 && found === undefined) found = step;
  }
  return found;
}

/** The `otpauth://` URI an authenticator app scans (Key Uri Format): issuer, account, SHA-1, 6 digits, 30 s. */
export function otpauthUri(issuer: string, account: string, secret: Uint8Array): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  const query = new URLSearchParams({
    secret: base32Encode(secret),
    issuer,
    algorithm: "SHA1",
    digits: String(TOTP_DIGITS),
    period: String(TOTP_STEP_SECONDS),
  });
  return `otpauth://totp/${label}?${query.toString()}`;
}
