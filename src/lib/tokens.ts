import { compactVerify, SignJWT } from "jose";
import type { Logger } from "./log";

/**
 * The two tokens a login hands out:
 * - the access token, a JWT signed with JWT_SECRET_KEY (HS256): claim `id` (the user id as a string, as
 *   the spec says), `sid` (the session), `iat`, and `exp` one hour later;
 * - the refresh token, `<session id>.<generation>.<MAC>`: an HMAC-SHA-256, under a key derived from the
 *   same secret, of the session id (128 random bits) and its generation. It is derived, not stored, so
 *   D1 never holds one, and every refresh of one generation yields the same next token.
 */

const ALGORITHM = "HS256";
export const ACCESS_TOKEN_TTL_SECONDS = 60 * 60;

const encoder = new TextEncoder();

function key(secret: string): Uint8Array {
  return encoder.encode(secret);
}

// The HS256 key of each secret, imported once per isolate: handing jose the raw bytes would import the
// key again on every signature and every verification.
const jwtKeys = new Map<string, Promise<CryptoKey>>();

function jwtKey(secret: string): Promise<CryptoKey> {
  let imported = jwtKeys.get(secret);
  if (!imported) {
    imported = crypto.subtle.importKey("raw", key(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    jwtKeys.set(secret, imported);
  }
  return imported;
}

/** HS256 wants a key at least as long as its output: 32 bytes. */
const MIN_SECRET_BYTES = 32;
let shortSecretReported = false;

export interface AccessClaims {
  userId: number;
  sessionId: string;
}

/** 16 random bytes in base64url. */
const SESSION_ID = /^[A-Za-z0-9_-]{22}$/;
/** A user id as the `id` claim holds it: canonical decimal, no sign, no leading zero, no white space. */
const CANONICAL_ID = /^[1-9][0-9]{0,15}$/;

export function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export function base64url(bytes: Uint8Array): string {
  return base64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromBase64url(text: string): Uint8Array {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

/** SHA-256 of a text's UTF-8 bytes. */
export async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/** SHA-256 of a text, in hex: what is stored of a high-entropy token, and what a request is compared by. */
export async function sha256Hex(text: string): Promise<string> {
  return [...(await sha256(text))].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** A new session id: 128 bits from the runtime's CSPRNG. */
export function newSessionId(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(16)));
}

export async function signAccessToken(claims: AccessClaims, secret: string, log?: Logger): Promise<string> {
  if (!shortSecretReported && key(secret).byteLength < MIN_SECRET_BYTES) {
    shortSecretReported = true;
    log?.warn("jwt_secret_short", { detail: `JWT_SECRET_KEY is shorter than ${MIN_SECRET_BYTES} bytes; use a longer random secret` });
  }
  const issuedAt = Math.floor(Date.now() / 1000);
  return new SignJWT({ id: String(claims.userId), sid: claims.sessionId })
    .setProtectedHeader({ alg: ALGORITHM, typ: "JWT" })
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + ACCESS_TOKEN_TTL_SECONDS)
    .sign(await jwtKey(secret));
}

/** The claims of an access token as its payload holds them: any of them may be missing or of another type. */
type Claims = Partial<Record<"id" | "sid" | "iat" | "exp" | "nbf", unknown>>;

const decoder = new TextDecoder();

function claimsOf(payload: Uint8Array): Claims {
  const claims: unknown = JSON.parse(decoder.decode(payload));
  if (typeof claims !== "object" || claims === null || Array.isArray(claims)) throw new Error("the token's payload is not a JSON object");
  return claims;
}

/**
 * The claims of a valid access token; throws for anything else. jose checks the signature and that it
 * is HS256 (a token cannot choose its own algorithm). The claims are checked here, as we issue them: jose's
 * general claim checks took about 50 µs of every authenticated request's CPU in the profile
 * (docs/performance.md). `iat` and `exp` must be present, `exp` in the future and `iat` not, `nbf` if
 * present passed, and a token may not live longer than ours do, whatever its `exp` says; `id` must be a
 * canonical decimal user id and `sid` a session id.
 * Whether the session is still live is for the caller to check, in D1.
 */
export async function verifyAccessToken(token: string, secret: string): Promise<AccessClaims> {
  const { payload } = await compactVerify(token, await jwtKey(secret), { algorithms: [ALGORITHM] });
  const { id, sid, iat, exp, nbf } = claimsOf(payload);
  const now = Math.floor(Date.now() / 1000);
  if (typeof iat !== "number" || typeof exp !== "number") throw new Error("an access token needs iat and exp");
  if (exp <= now) throw new Error("the token has expired (exp)");
  if (iat > now) throw new Error("the token was issued in the future (iat)");
  // With `exp` in the future, this also refuses a token issued longer ago than one lifetime.
  if (exp - iat > ACCESS_TOKEN_TTL_SECONDS) throw new Error("access token lives longer than an access token may");
  if (nbf !== undefined && (typeof nbf !== "number" || nbf > now)) throw new Error("the token is not valid yet (nbf)");
  if (typeof id !== "string" || !CANONICAL_ID.test(id) || !Number.isSafeInteger(Number(id))) throw new Error("bad id claim");
  if (typeof sid !== "string" || !SESSION_ID.test(sid)) throw new Error("bad sid claim");
  return { userId: Number(id), sessionId: sid };
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
      .importKey("raw", key(secret), "HKDF", false, ["deriveKey"])
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
