import { describe, expect, it } from "vitest";
import { base32Decode, base32Encode, hotp, matchingStep, otpauthUri, stepAt, totpAt } from "../../src/lib/totp";

/** RFC 6238, Appendix B: the SHA-1 test vectors (8 digits, 30-second steps, the 20-byte ASCII seed). */
const SEED = new TextEncoder().encode("12345678901234567890");
const VECTORS: [number, string][] = [
  [59, "94287082"],
  [1111111109, "07081804"],
  [1111111111, "14050471"],
  [1234567890, "89005924"],
  [2000000000, "69279037"],
  [20000000000, "65353130"],
];

describe("TOTP", () => {
  it.each(VECTORS)("matches RFC 6238 at T = %i s", async (seconds, expected) => {
    expect(await hotp(SEED, stepAt(seconds * 1000), 8)).toBe(expected);
  });

  it("answers 6 digits by default: the last 6 of the 8-digit vectors (RFC 4226 truncation)", async () => {
    expect(await totpAt(SEED, stepAt(59_000))).toBe("287082");
  });

  it("accepts the step before and after the current one, and no other", async () => {
    const now = 1_700_000_000_000;
    const step = stepAt(now);
    for (const offset of [-1, 0, 1])
      expect(await matchingStep(SEED, await totpAt(SEED, step + offset), now)).toBe(step + offset);
    for (const offset of [-2, 2])
      expect(await matchingStep(SEED, await totpAt(SEED, step + offset), now)).toBeUndefined();
    expect(await matchingStep(SEED, "12345", now)).toBeUndefined();
  });

  it("round-trips base32 and writes the otpauth URI authenticator apps read", () => {
    expect(base32Encode(SEED)).toBe("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
    expect(base32Decode("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ")).toEqual(SEED);
    expect(otpauthUri("Notes API", "ada@example.com", SEED)).toBe(
      "otpauth://totp/Notes%20API:ada%40example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Notes+API&algorithm=SHA1&digits=6&period=30",
    );
  });
});
