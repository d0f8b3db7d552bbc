import { jwtVerify, SignJWT } from "jose";
import type { Logger } from "./log";

const ALGORITHM = "HS256";
export const LOGIN_TOKEN_TTL_SECONDS = 60 * 60;

function key(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

/** HS256 wants a key at least as long as its output: 32 bytes. */
const MIN_SECRET_BYTES = 32;
let shortSecretReported = false;

/** A login token: claim `id` (the user id as a string), `iat`, and `exp` one hour later. */
export async function signLoginToken(userId: number, secret: string, log?: Logger): Promise<string> {
  if (!shortSecretReported && key(secret).byteLength < MIN_SECRET_BYTES) {
    shortSecretReported = true;
    log?.warn("jwt_secret_short", { detail: `JWT_SECRET_KEY is shorter than ${MIN_SECRET_BYTES} bytes; use a longer random secret` });
  }
  const issuedAt = Math.floor(Date.now() / 1000);
  return new SignJWT({ id: String(userId) })
    .setProtectedHeader({ alg: ALGORITHM, typ: "JWT" })
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + LOGIN_TOKEN_TTL_SECONDS)
    .sign(key(secret));
}

/** Verifies a login token; only HS256 is accepted, so a token cannot choose its own algorithm. */
export async function verifyLoginToken(token: string, secret: string): Promise<{ id: string }> {
  const { payload } = await jwtVerify(token, key(secret), { algorithms: [ALGORITHM] });
  if (typeof payload.id !== "string") throw new Error("login token has no id claim");
  return { id: payload.id };
}
