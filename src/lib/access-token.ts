import { compactVerify, SignJWT } from "jose";
import type { Logger } from "./log";

/**
 * The access token a login hands out: a JWT signed with JWT_SECRET_KEY (HS256), claim `id` (the user id
 * as a string, as the spec says), `sid` (the session), `iat`, and `exp` one hour later.
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
    imported = crypto.subtle.importKey("raw", key(secret), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
      "verify",
    ]);
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

export async function signAccessToken(claims: AccessClaims, secret: string, log?: Logger): Promise<string> {
  if (!shortSecretReported && key(secret).byteLength < MIN_SECRET_BYTES) {
    shortSecretReported = true;
    log?.warn("jwt_secret_short", {
      detail: `JWT_SECRET_KEY is shorter than ${MIN_SECRET_BYTES} bytes; use a longer random secret`,
    });
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
  if (typeof claims !== "object" || claims === null || Array.isArray(claims))
    throw new Error("the token's payload is not a JSON object");
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
  if (typeof id !== "string" || !CANONICAL_ID.test(id) || !Number.isSafeInteger(Number(id)))
    throw new Error("bad id claim");
  if (typeof sid !== "string" || !SESSION_ID.test(sid)) throw new Error("bad sid claim");
  return { userId: Number(id), sessionId: sid };
}
