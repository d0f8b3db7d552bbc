import { env } from "cloudflare:workers";
import { SignJWT, UnsecuredJWT } from "jose";
import { describe, expect, it } from "vitest";
import { readRefreshToken, refreshTokenFor, signAccessToken, verifyAccessToken } from "../../src/lib/tokens";

const SID = "AAAAAAAAAAAAAAAAAAAAAA";

describe("access tokens", () => {
  const secret = env.JWT_SECRET_KEY!;
  const key = new TextEncoder().encode(secret);

  it("round-trips the user and session", async () => {
    const claims = { userId: 42, sessionId: SID };
    expect(await verifyAccessToken(await signAccessToken(claims, secret), secret)).toEqual(claims);
  });

  it("keeps one key per secret: a token verifies under its own secret only, whichever was used first", async () => {
    const other = `${secret}-other`;
    const claims = { userId: 7, sessionId: SID };
    const mine = await signAccessToken(claims, secret);
    const theirs = await signAccessToken(claims, other);
    await expect(verifyAccessToken(mine, other)).rejects.toThrow();
    await expect(verifyAccessToken(theirs, secret)).rejects.toThrow();
    expect(await verifyAccessToken(theirs, other)).toEqual(claims);
    expect(await verifyAccessToken(mine, secret)).toEqual(claims);
  });

  it("accepts an HS256 token made from the raw secret by any JWT library", async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ id: "9", sid: SID }).setProtectedHeader({ alg: "HS256" }).setIssuedAt(now).setExpirationTime(now + 60).sign(key);
    expect(await verifyAccessToken(token, secret)).toEqual({ userId: 9, sessionId: SID });
  });

  it("refuses a token signed with another algorithm, even with the same secret", async () => {
    const hs512 = await new SignJWT({ id: "1", sid: SID }).setProtectedHeader({ alg: "HS512" }).setExpirationTime("1h").sign(key);
    await expect(verifyAccessToken(hs512, secret)).rejects.toThrow();
  });

  it("refuses an unsigned token", async () => {
    const unsigned = new UnsecuredJWT({ id: "1", sid: SID }).setExpirationTime("1h").encode();
    await expect(verifyAccessToken(unsigned, secret)).rejects.toThrow();
  });

  it("refuses an expired token", async () => {
    const past = Math.floor(Date.now() / 1000) - 7200;
    const expired = await new SignJWT({ id: "1", sid: SID })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuedAt(past)
      .setExpirationTime(past + 3600)
      .sign(key);
    await expect(verifyAccessToken(expired, secret)).rejects.toThrow(/exp/);
  });
});

describe("refresh tokens", () => {
  const secret = env.JWT_SECRET_KEY!;

  it("names the session and generation they were made for, and only under the same secret", async () => {
    const token = await refreshTokenFor({ sessionId: SID, generation: 7 }, secret);
    expect(token).toMatch(/^A{22}\.7\.[A-Za-z0-9_-]{43}$/);
    expect(await readRefreshToken(token, secret)).toEqual({ sessionId: SID, generation: 7 });
    expect(await readRefreshToken(token, `${secret}-other`)).toBeUndefined();
  });

  it("refuses a token whose generation or session was changed", async () => {
    const token = await refreshTokenFor({ sessionId: SID, generation: 7 }, secret);
    expect(await readRefreshToken(token.replace(".7.", ".8."), secret)).toBeUndefined();
    expect(await readRefreshToken(`B${token.slice(1)}`, secret)).toBeUndefined();
    expect(await readRefreshToken(token.replace(".7.", ".07."), secret)).toBeUndefined();
  });
});
