import { describe, expect, it } from "vitest";
import { codesMatch, generateCode } from "../../../src/auth/core/codes";

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
