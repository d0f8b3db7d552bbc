import { jwtVerify, SignJWT } from "jose";

const ALGORITHM = "HS256";
export const LOGIN_TOKEN_TTL_SECONDS = 60 * 60;

function key(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

/** A login token: claim `id` (the user id as a string), `iat`, and `exp` one hour later. */
export async function signLoginToken(userId: number, secret: string): Promise<string> {
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
