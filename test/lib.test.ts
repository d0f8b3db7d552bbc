import { env } from "cloudflare:workers";
import { SignJWT, UnsecuredJWT } from "jose";
import { describe, expect, it } from "vitest";
import { codesMatch, generateCode } from "../src/auth/codes";
import { describeError, maskEmails } from "../src/lib/log";
import { isLoopbackHost, withAsciiDomain } from "../src/lib/smtp";
import { readRefreshToken, refreshTokenFor, signAccessToken, verifyAccessToken } from "../src/lib/tokens";

describe("generateCode", () => {
  it("draws six-digit codes spread over the whole range 100000..999999", () => {
    const codes = Array.from({ length: 20_000 }, generateCode);
    expect(codes.every((code) => /^[1-9]\d{5}$/.test(code))).toBe(true);
    // Each of the nine leading digits should hold about a ninth of the draws.
    const byLeadingDigit = new Map<string, number>();
    for (const code of codes) byLeadingDigit.set(code[0]!, (byLeadingDigit.get(code[0]!) ?? 0) + 1);
    expect(byLeadingDigit.size).toBe(9);
    for (const count of byLeadingDigit.values()) expect(count).toBeGreaterThan(1_900);
    expect(new Set(codes).size).toBeGreaterThan(19_000);
  });
});

describe("codesMatch", () => {
  it("accepts only the identical code", () => {
    expect(codesMatch("123456", "123456")).toBe(true);
    expect(codesMatch("123457", "123456")).toBe(false);
    expect(codesMatch("12345", "123456")).toBe(false);
    expect(codesMatch("1234567", "123456")).toBe(false);
    expect(codesMatch("", "123456")).toBe(false);
  });
});

const SID = "AAAAAAAAAAAAAAAAAAAAAA";

describe("access tokens", () => {
  const secret = env.JWT_SECRET_KEY!;
  const key = new TextEncoder().encode(secret);

  it("round-trips the user and session", async () => {
    const claims = { userId: 42, sessionId: SID };
    expect(await verifyAccessToken(await signAccessToken(claims, secret), secret)).toEqual(claims);
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

describe("maskEmails", () => {
  it("masks every address-shaped part of a text, whatever surrounds it", () => {
    expect(maskEmails("550 <jane.doe@example.com>: Recipient address rejected")).toBe("550 <j***@example.com>: Recipient address rejected");
    expect(maskEmails('to "ann@a.example", bob+x@b.example; (carl@c.example) dora@d.example.')).toBe(
      'to "a***@a.example", b***@b.example; (c***@c.example) d***@d.example.',
    );
    expect(maskEmails("ünïcode@bücher.example and 😀x@example.com")).toBe("ü***@bücher.example and 😀***@example.com");
    expect(maskEmails("no address here, user@ or @domain")).toBe("no address here, user@ or @domain");
  });

  it("is applied to logged error messages before they are cut to 300 characters", () => {
    const { errorMessage } = describeError(new Error(`${"x".repeat(290)} jane.doe@example.com`));
    expect(errorMessage).toBe(`${"x".repeat(290)} j***@exam`);
  });
});

describe("isLoopbackHost, the hosts that may receive SMTP credentials without TLS", () => {
  it.each(["localhost", "LocalHost", "127.0.0.1", "127.255.0.9", "::1", "[::1]"])("accepts %s", (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });

  it.each(["0.0.0.0", "127.0.0.256", "127.1", "128.0.0.1", "10.0.0.1", "::ffff:127.0.0.1", "localhost.example.com", "smtp.gmail.com", ""])(
    "refuses %s",
    (host) => {
      expect(isLoopbackHost(host)).toBe(false);
    },
  );
});

describe("withAsciiDomain", () => {
  it.each([
    ["ünïcode@bücher.example", "ünïcode@xn--bcher-kva.example"],
    ["Ada@BÜCHER.Example", "Ada@xn--bcher-kva.example"],
    ["user@例え.テスト", "user@xn--r8jz45g.xn--zckzah"],
    ["user@Example.COM", "user@Example.COM"],
  ])("writes %s as %s", (address, expected) => {
    expect(withAsciiDomain(address)).toBe(expected);
  });

  it.each(["user@bü/cher.example", "user@bü:25", "user@１２７.０.０.１", "user@bü%41.example"])("refuses %s", (address) => {
    expect(() => withAsciiDomain(address)).toThrow(/is not a valid internationalized domain name$/);
  });
});
