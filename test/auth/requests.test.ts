import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { Contract } from "../contract";
import { postLogin, register, setUser, verifiedAccount, verify } from "../support/accounts";
import { randomEmail, TEXT, textOf } from "../support/app";
import { mailedCode } from "../support/mail";

/**
 * The per-account limits under concurrent bursts, as an attacker sends them: every request of a burst
 * is launched before any answer is read. Each limit must be decided by one atomic write, so the counts
 * below are exact, not "roughly".
 */

describe("Unicode in addresses and passwords", () => {
  const nfc = (tag: string) => `caf\u00E9-${tag}@example.com`;
  const nfd = (tag: string) => `cafe\u0301-${tag}@example.com`;

  it("treats the NFC and NFD spellings of an address as one account", async () => {
    const tag = crypto.randomUUID();
    expect((await register(nfd(tag))).status).toBe(201);
    expect(await textOf(await register(nfc(tag)))).toEqual({ status: 409, type: TEXT, body: Contract.userExists });
    const stored = await env.DB.prepare("SELECT email FROM users WHERE email = ?").bind(nfc(tag)).first("email");
    expect(stored).toBe(nfc(tag));
  });

  it.each([
    ["a zero-width joiner", "a\u200Db@example.com"],
    ["a right-to-left override", "\u202Eadmin@example.com"],
    ["a soft hyphen", "ad\u00ADmin@example.com"],
    ["a private-use character", "a\uE000b@example.com"],
  ])("refuses an address with %s", async (_case, email) => {
    expect(await textOf(await register(email))).toEqual({
      status: 400,
      type: TEXT,
      body: "Please provide a valid email address.",
    });
  });

  it("accepts a password typed in another Unicode form (NFKC): composed or not, full-width or not", async () => {
    const email = randomEmail();
    const typed = "p\u00E4ssw\uFF4Frd \uFF11\uFF12"; // "pässwｏrd １２": precomposed ä, full-width o and digits
    expect((await register(email, typed)).status).toBe(201);
    expect((await verify(email, await mailedCode(email))).status).toBe(200);
    expect((await postLogin(email, "pa\u0308ssword 12")).status).toBe(200);
    expect((await postLogin(email, typed)).status).toBe(200);
  });

  it("still lets in an account whose hash was made from the password as typed, before normalization", async () => {
    const email = await verifiedAccount();
    const typed = "cafe\u0301 password"; // NFD: differs from its NFKC form
    const bcrypt = await import("bcryptjs");
    await setUser(email, { password: bcrypt.hashSync(typed, 4) });
    expect((await postLogin(email, typed)).status).toBe(200);
  });
});
