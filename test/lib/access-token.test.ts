import { env } from "cloudflare:workers";
import { CompactSign, SignJWT, UnsecuredJWT } from "jose";
import { describe, expect, it } from "vitest";
import { signAccessToken, verifyAccessToken } from "../../src/lib/access-token";

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
    const token = await new SignJWT({ id: "9", sid: SID })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(key);
    expect(await verifyAccessToken(token, secret)).toEqual({ userId: 9, sessionId: SID });
  });

  it("refuses a token signed with another algorithm, even with the same secret", async () => {
    const hs512 = await new SignJWT({ id: "1", sid: SID })
      .setProtectedHeader({ alg: "HS512" })
      .setExpirationTime("1h")
      .sign(key);
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

  it("refuses a correctly signed token whose claims are not what we issue", async () => {
    const now = Math.floor(Date.now() / 1000);
    /** Signed with the real secret: only the claims can make these fail. */
    const signed = (payload: unknown) =>
      new CompactSign(new TextEncoder().encode(JSON.stringify(payload))).setProtectedHeader({ alg: "HS256" }).sign(key);
    const valid = { id: "3", sid: SID, iat: now, exp: now + 60 };
    expect(await verifyAccessToken(await signed(valid), secret)).toEqual({ userId: 3, sessionId: SID });

    const refused: [unknown, RegExp][] = [
      [[valid], /not a JSON object/],
      ["a string", /not a JSON object/],
      [{ ...valid, iat: undefined }, /needs iat and exp/],
      [{ ...valid, exp: undefined }, /needs iat and exp/],
      [{ ...valid, exp: String(now + 60) }, /needs iat and exp/],
      [{ ...valid, exp: now }, /expired/],
      [{ ...valid, iat: now + 30, exp: now + 90 }, /issued in the future/],
      [{ ...valid, iat: now - 3000, exp: now + 1000 }, /lives longer/],
      [{ ...valid, nbf: now + 30 }, /not valid yet/],
      [{ ...valid, nbf: "now" }, /not valid yet/],
      [{ ...valid, id: 3 }, /bad id/],
      [{ ...valid, id: "03" }, /bad id/],
      [{ ...valid, sid: "short" }, /bad sid/],
    ];
    for (const [payload, reason] of refused)
      await expect(verifyAccessToken(await signed(payload), secret), JSON.stringify(payload)).rejects.toThrow(reason);
    expect(await verifyAccessToken(await signed({ ...valid, nbf: now }), secret)).toEqual({
      userId: 3,
      sessionId: SID,
    });
  });
});
