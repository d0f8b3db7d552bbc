import { base64url, fromBase64url } from "./encoding";
import { macKey } from "./crypto";

/**
 * The refresh token a login hands out beside the access token: `<session id>.<generation>.<MAC>`, an
 * HMAC-SHA-256, under a key derived from JWT_SECRET_KEY, of the session id (128 random bits) and its
 * generation. It is derived, not stored, so D1 never holds one, and every refresh of one generation
 * yields the same next token.
 */

const encoder = new TextEncoder();

function refreshKey(secret: string): Promise<CryptoKey> {
  return macKey(secret, "notes-api refresh token v1");
}

export interface RefreshClaims {
  sessionId: string;
  generation: number;
}

function refreshPayload({ sessionId, generation }: RefreshClaims): Uint8Array {
  return encoder.encode(`${sessionId}.${generation}`);
}

/** The refresh token of a session's generation. */
export async function refreshTokenFor(claims: RefreshClaims, secret: string): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", await refreshKey(secret), refreshPayload(claims));
  return `${claims.sessionId}.${claims.generation}.${base64url(new Uint8Array(mac))}`;
}

const REFRESH_TOKEN = /^([A-Za-z0-9_-]{22})\.(0|[1-9][0-9]{0,8})\.([A-Za-z0-9_-]{43})$/;

/** The session and generation a refresh token names, if its MAC is right; undefined for anything else. */
export async function readRefreshToken(token: string, secret: string): Promise<RefreshClaims | undefined> {
  const match = REFRESH_TOKEN.exec(token);
  if (!match) return undefined;
  const claims = { sessionId: match[1]!, generation: Number(match[2]) };
  const mac = fromBase64url(match[3]!);
  // 43 base64url characters carry 258 bits for the MAC's 256: four spellings decode to the same MAC. Only
  // the one we hand out is a refresh token, so a token has one spelling, like the session id it names.
  if (base64url(mac) !== match[3]) return undefined;
  // HMAC verification compares in constant time.
  const valid = await crypto.subtle.verify("HMAC", await refreshKey(secret), mac, refreshPayload(claims));
  return valid ? claims : undefined;
}
