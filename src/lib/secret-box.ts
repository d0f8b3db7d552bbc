import { sha256Hex } from "./crypto";
import { base64url, fromBase64url } from "./encoding";

/**
 * Secrets kept at rest (the TOTP secrets of second factors), encrypted with AES-256-GCM under a key
 * derived with HKDF-SHA-256 from a secret binding (MFA_ENCRYPTION_KEY, or JWT_SECRET_KEY when that is not
 * set), so a copy of the database alone reveals no secret. Each box names its key (`v1.<key id>.<iv>.<data>`,
 * the key id a hash of the secret binding): to rotate, set the new secret and keep the old one as
 * MFA_ENCRYPTION_KEY_PREVIOUS until every box has been opened and sealed again under the new one.
 */

const PURPOSE = new TextEncoder().encode("notes-api mfa secret v1");
const keys = new Map<string, Promise<{ id: string; key: CryptoKey }>>();

function keyOf(secret: string): Promise<{ id: string; key: CryptoKey }> {
  let derived = keys.get(secret);
  if (!derived) {
    derived = (async () => {
      const base = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), "HKDF", false, ["deriveKey"]);
      const key = await crypto.subtle.deriveKey(
        { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: PURPOSE },
        base,
        { name: "AES-GCM", length: 256 },
        false,
        ["encrypt", "decrypt"],
      );
      return { id: (await sha256Hex(`key id\n${secret}`)).slice(0, 12), key };
    })();
    keys.set(secret, derived);
  }
  return derived;
}

/** Encrypts `plain` under the current secret. */
export async function seal(plain: Uint8Array, secret: string): Promise<string> {
  const { id, key } = await keyOf(secret);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const data = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, plain));
  return `v1.${id}.${base64url(iv)}.${base64url(data)}`;
}

/** Decrypts a box sealed under one of `secrets`; undefined when none of them made it or it was altered. */
export async function open(box: string, secrets: readonly string[]): Promise<Uint8Array | undefined> {
  const [version, id, iv, data] = box.split(".");
  if (version !== "v1" || !id || !iv || !data) return undefined;
  for (const secret of secrets) {
    const candidate = await keyOf(secret);
    if (candidate.id !== id) continue;
    try {
      return new Uint8Array(
        await crypto.subtle.decrypt({ name: "AES-GCM", iv: fromBase64url(iv) }, candidate.key, fromBase64url(data)),
      );
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Whether `box` was sealed under `secret` (and so needs no sealing again after a rotation). */
export async function sealedUnder(box: string, secret: string): Promise<boolean> {
  return box.split(".")[1] === (await keyOf(secret)).id;
}
