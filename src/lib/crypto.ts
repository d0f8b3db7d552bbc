import { base64url, hex } from "./encoding";

/** Hashes, random identifiers and derived MAC keys: the primitives every token and stored secret is made of. */

const encoder = new TextEncoder();

/** SHA-256 of a text's UTF-8 bytes. */
export async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/** SHA-256 of a text, in hex: what is stored of a high-entropy token, and what a request is compared by. */
export async function sha256Hex(text: string): Promise<string> {
  return hex(await sha256(text));
}

/** `bytes` random bytes (32 unless told), base64url: a state, a nonce, a PKCE verifier, a public link's token. */
export function randomToken(bytes = 32): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** The PKCE S256 challenge of a verifier (RFC 7636): the base64url SHA-256 of its ASCII. */
export async function pkceChallenge(verifier: string): Promise<string> {
  return base64url(await sha256(verifier));
}

/** A new random identifier (a session, a device, a request): 128 bits from the runtime's CSPRNG, base64url. */
export function randomId(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(16)));
}

// One HMAC key per secret, purpose and isolate, derived from JWT_SECRET_KEY with HKDF, so the MAC of a
// refresh token (or a device token) is never something the JWT key, or the key of another purpose, would
// also sign.
const macKeys = new Map<string, Promise<CryptoKey>>();

/** The HMAC-SHA-256 key of `purpose` (the HKDF info), derived from `secret`. */
export function macKey(secret: string, purpose: string): Promise<CryptoKey> {
  const id = `${purpose}\n${secret}`;
  let derived = macKeys.get(id);
  if (!derived) {
    derived = crypto.subtle
      .importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveKey"])
      .then((base) =>
        crypto.subtle.deriveKey(
          { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode(purpose) },
          base,
          { name: "HMAC", hash: "SHA-256", length: 256 },
          false,
          ["sign", "verify"],
        ),
      );
    macKeys.set(id, derived);
  }
  return derived;
}
