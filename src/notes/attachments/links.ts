import { ConfigError } from "../../config";
import { macKey } from "../../lib/crypto";
import { hex } from "../../lib/encoding";
import { SECOND } from "../../lib/units";

/**
 * Signed links: `<origin>/attachments/{id}?expires=<unix seconds>&signature=<hex>`, for where no Authorization
 * header can be set (`<img src>`, a download in a browser). The signature is HMAC-SHA-256 of the id and the
 * expiry under a key derived from JWT_SECRET_KEY for this purpose alone (HKDF, lib/crypto.ts), so it is never
 * a signature any other part of the service would also make. A link proves only that the service handed it
 * out, until it expires; the attachment's row, looked up afterwards, decides whether there is still a file.
 */

/** The HKDF info of the links' key. */
const LINK_KEY_PURPOSE = "notes-api attachment link v1";

/** The path of an attachment's link, mounted at the root (index.ts). */
export const LINK_PATH = "/attachments";

const encoder = new TextEncoder();
const signed = (id: string, expires: number) => encoder.encode(`${id}\n${expires}`);

function keyOf(secret: string | undefined): Promise<CryptoKey> {
  if (!secret) throw new ConfigError("JWT_SECRET_KEY is not set; cannot sign attachment links");
  return macKey(secret, LINK_KEY_PURPOSE);
}

/** The link to attachment `id`, valid `ttlSeconds` from `now` (rounded up to the next whole second). */
export async function signedLink(
  origin: string,
  secret: string | undefined,
  id: string,
  now: number,
  ttlSeconds: number,
): Promise<string> {
  const expires = Math.ceil(now / SECOND) + ttlSeconds;
  const signature = hex(new Uint8Array(await crypto.subtle.sign("HMAC", await keyOf(secret), signed(id, expires))));
  return `${origin}${LINK_PATH}/${encodeURIComponent(id)}?expires=${expires}&signature=${signature}`;
}

const EXPIRES = /^[1-9][0-9]{0,11}$/;
const SIGNATURE = /^[0-9a-f]{64}$/;

/**
 * What is wrong with a link's `expires` and `signature` for attachment `id` at `now`: "invalid" (missing,
 * malformed, or not our signature of these two: anything changed), "expired", or nothing. Compared by
 * WebCrypto's verify, in constant time.
 */
export async function linkProblem(
  secret: string | undefined,
  id: string,
  expires: string | undefined,
  signature: string | undefined,
  now: number,
): Promise<"invalid" | "expired" | undefined> {
  if (!expires || !EXPIRES.test(expires) || !signature || !SIGNATURE.test(signature)) return "invalid";
  const mac = Uint8Array.from(signature.match(/../g)!, (pair) => Number.parseInt(pair, 16));
  if (!(await crypto.subtle.verify("HMAC", await keyOf(secret), mac, signed(id, Number(expires))))) return "invalid";
  return now > Number(expires) * SECOND ? "expired" : undefined;
}
