import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { CLOCK_TOLERANCE_SECONDS, ID_TOKEN_MAX_AGE_MS } from "../../../src/auth/policy";
import { sha256Hex } from "../../../src/lib/crypto";
import { bearer, reset, resetCode, storedUser } from "../../support/accounts";
import { call, callWithEnv, count, fireCron, JSON_TYPE, jsonOf, tally, TEXT, textOf } from "../../support/app";
import { smtpPort } from "../../support/mail";
import { identityClaims, idTokenSignIn, signedIdToken } from "../../support/oauth";

/**
 * The native flow of social sign-in (src/auth/oauth/native.ts and the providers' `identity`): id_tokens signed by the
 * loopback OpenID providers (test/oauth/servers.ts) with the claims each test chooses, or by a foreign key.
 */

const LoginKeys = ["device_token", "expires_in", "refresh_token", "token"];
const invalid = { status: 401, type: TEXT, body: AuthMessage.invalidIdToken };

describe("POST /auth/oauth/{provider}/id-token", () => {
  it("signs in with an id_token for the web client id or one of OAUTH_<N>_AUDIENCES, like a login", async () => {
    for (const aud of ["google-web-client", "google-ios-client", "google-android-client"]) {
      const claims = identityClaims({ aud });
      const response = await idTokenSignIn("google", { id_token: await signedIdToken("google", claims) });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe(JSON_TYPE);
      const tokens = (await response.json()) as Record<string, string>;
      expect(Object.keys(tokens).sort()).toEqual(LoginKeys);
      const sessions = (await (await call("GET", "/auth/sessions", undefined, bearer(tokens.token!))).json()) as Array<
        Record<string, unknown>
      >;
      expect(sessions).toEqual([expect.objectContaining({ amr: ["fed"], provider: "google" })]);
      expect(await storedUser(String(claims.email))).toMatchObject({ isVerified: 1, password: "!" });
    }
  });

  it('signs in with Sign in with Apple\'s id_token, whose email_verified is the string "true"', async () => {
    const claims = identityClaims({ aud: "com.example.app", email_verified: "true" });
    expect((await idTokenSignIn("apple", { id_token: await signedIdToken("apple", claims) })).status).toBe(200);
  });

  it("works for any OpenID provider of OAUTH_PROVIDERS, with or without a client secret", async () => {
    const claims = identityClaims({ aud: "acme-client" });
    expect((await idTokenSignIn("acme", { id_token: await signedIdToken("google", claims) })).status).toBe(200);
  });

  it("answers 401 for a bad signature, another issuer, another audience or an expired token, and makes no account", async () => {
    const tokens = [
      await signedIdToken("google", identityClaims({ aud: "google-web-client" }), { foreignKey: true }),
      await signedIdToken("google", identityClaims({ aud: "google-web-client", iss: "https://accounts.evil.example" })),
      // Apple's key and issuer are not Google's.
      await signedIdToken("apple", identityClaims({ aud: "google-web-client" })),
      await signedIdToken("google", identityClaims({ aud: "someone-elses-client" })),
      await signedIdToken("google", identityClaims({ aud: "google-web-client" }), { expiresIn: -120 }),
      "not.a.jwt",
    ];
    const before = await count("SELECT count(*) AS n FROM users");
    for (const token of tokens)
      expect(await textOf(await idTokenSignIn("google", { id_token: token }))).toEqual(invalid);
    expect(await count("SELECT count(*) AS n FROM users")).toBe(before);
  });

  it("takes a nonce as the token carries it, or as its hex SHA-256 (Sign in with Apple), and nothing else", async () => {
    const raw = crypto.randomUUID();
    const plain = identityClaims({ aud: "google-web-client", nonce: raw });
    expect((await idTokenSignIn("google", { id_token: await signedIdToken("google", plain), nonce: raw })).status).toBe(
      200,
    );
    const hashed = identityClaims({ aud: "com.example.app", nonce: await sha256Hex(raw) });
    expect((await idTokenSignIn("apple", { id_token: await signedIdToken("apple", hashed), nonce: raw })).status).toBe(
      200,
    );

    const mismatch = { status: 401, type: TEXT, body: AuthMessage.nonceMismatch };
    const carrying = await signedIdToken("google", identityClaims({ aud: "google-web-client", nonce: raw }));
    expect(await textOf(await idTokenSignIn("google", { id_token: carrying }))).toEqual(mismatch);
    expect(await textOf(await idTokenSignIn("google", { id_token: carrying, nonce: "another" }))).toEqual(mismatch);
    expect(
      await textOf(await idTokenSignIn("google", { id_token: carrying, nonce: await sha256Hex(await sha256Hex(raw)) })),
    ).toEqual(mismatch);
    const without = await signedIdToken("google", identityClaims({ aud: "google-web-client" }));
    expect(await textOf(await idTokenSignIn("google", { id_token: without, nonce: raw }))).toEqual(mismatch);
  });

  it("answers 403 JSON, and makes no account, for an address the provider does not vouch for", async () => {
    for (const claims of [
      identityClaims({ email_verified: false }),
      identityClaims({ email_verified: "false" }),
      identityClaims({ email_verified: undefined }),
      identityClaims({ email: undefined }),
    ]) {
      const response = await idTokenSignIn("google", {
        id_token: await signedIdToken("google", { ...claims, aud: "google-web-client" }),
      });
      expect(await jsonOf(response)).toEqual({
        status: 403,
        type: JSON_TYPE,
        body: { error: "email_not_verified", error_description: AuthMessage.emailNotVouched },
      });
      if (typeof claims.email === "string") expect(await storedUser(claims.email)).toBeNull();
    }
  });

  it('refuses the string "true" from every provider but Apple, which documents it: a Google token with it makes and links nothing (I1)', async () => {
    const claims = identityClaims({ aud: "google-web-client", email_verified: "true" });
    const response = await idTokenSignIn("google", { id_token: await signedIdToken("google", claims) });
    expect(await jsonOf(response)).toEqual({
      status: 403,
      type: JSON_TYPE,
      body: { error: "email_not_verified", error_description: AuthMessage.emailNotVouched },
    });
    expect(await storedUser(String(claims.email))).toBeNull();
  });

  it("refuses a token for several audiences without azp, and any azp that is not one of the provider's clients; takes one naming its client (I1)", async () => {
    const before = await count("SELECT count(*) AS n FROM users");
    for (const extra of [
      { aud: ["google-web-client", "someone-elses-client"] },
      { aud: ["google-web-client", "someone-elses-client"], azp: "someone-elses-client" },
      { aud: "google-web-client", azp: "someone-elses-client" },
      { aud: "google-web-client", azp: 42 },
    ]) {
      const token = await signedIdToken("google", identityClaims(extra));
      expect(await textOf(await idTokenSignIn("google", { id_token: token }))).toEqual(invalid);
    }
    expect(await count("SELECT count(*) AS n FROM users")).toBe(before);
    // Google's Android tokens: the web client as the audience, the Android client (one of OAUTH_GOOGLE_AUDIENCES) as azp.
    for (const extra of [
      { aud: ["google-web-client", "someone-elses-client"], azp: "google-web-client" },
      { aud: "google-web-client", azp: "google-android-client" },
    ]) {
      const token = await signedIdToken("google", identityClaims(extra));
      expect((await idTokenSignIn("google", { id_token: token })).status).toBe(200);
    }
  });

  it("refuses a token issued ahead of the clock beyond CLOCK_TOLERANCE_SECONDS (a year, or a minute), or longer than ID_TOKEN_MAX_AGE_MS ago (I1)", async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const iat of [
      now + 365 * 24 * 3600,
      now + CLOCK_TOLERANCE_SECONDS + 30,
      now - ID_TOKEN_MAX_AGE_MS / 1000 - 120,
    ]) {
      const claims = identityClaims({ aud: "google-web-client", iat, exp: iat + 7200 });
      expect(await textOf(await idTokenSignIn("google", { id_token: await signedIdToken("google", claims) }))).toEqual(
        invalid,
      );
    }
    const skewed = identityClaims({ aud: "google-web-client", iat: now + CLOCK_TOLERANCE_SECONDS - 10 });
    expect((await idTokenSignIn("google", { id_token: await signedIdToken("google", skewed) })).status).toBe(200);
  });

  it("refuses an address registration would refuse, whoever vouches for it: CR LF, no @, 300 characters, a bidi override (I2)", async () => {
    for (const email of [
      "victim@example.com\r\nBcc: everyone@example.com",
      "no-at-sign.example.com",
      `${"a".repeat(300)}@example.com`,
      "\u202Emoc.elpmaxe@evil.example",
    ]) {
      const claims = identityClaims({ aud: "google-web-client", email });
      const response = await idTokenSignIn("google", { id_token: await signedIdToken("google", claims) });
      expect(await jsonOf(response)).toEqual({
        status: 403,
        type: JSON_TYPE,
        body: { error: "email_not_verified", error_description: AuthMessage.emailNotVouched },
      });
      expect(await count("SELECT count(*) AS n FROM users WHERE email = ?", email.trim().toLowerCase())).toBe(0);
    }
  });

  it("takes an id_token once: the same token again is a 401, also after the owner's reset, and also after a refusal (N3)", async () => {
    const claims = identityClaims({ aud: "google-web-client", nonce: "the app's own nonce" });
    const token = await signedIdToken("google", claims);
    const used = { status: 401, type: TEXT, body: AuthMessage.idTokenUsed };
    expect((await idTokenSignIn("google", { id_token: token, nonce: "the app's own nonce" })).status).toBe(200);
    // The nonce is the app's, never issued by the server: it proves nothing against a replay.
    expect(await textOf(await idTokenSignIn("google", { id_token: token, nonce: "the app's own nonce" }))).toEqual(
      used,
    );
    const email = String(claims.email);
    expect((await reset(email, await resetCode(email))).status).toBe(200);
    expect(await textOf(await idTokenSignIn("google", { id_token: token, nonce: "the app's own nonce" }))).toEqual(
      used,
    );
    // A token whose sign-in was refused (an address not vouched for) is spent too.
    const unvouched = await signedIdToken(
      "google",
      identityClaims({ aud: "google-web-client", email_verified: false }),
    );
    expect((await idTokenSignIn("google", { id_token: unvouched })).status).toBe(403);
    expect(await textOf(await idTokenSignIn("google", { id_token: unvouched }))).toEqual(used);
  });

  it("opens exactly one session for 30 requests with one id_token launched together (N3)", async () => {
    const claims = identityClaims({ aud: "google-web-client" });
    const token = await signedIdToken("google", claims);
    const answers = await Promise.all(Array.from({ length: 30 }, () => idTokenSignIn("google", { id_token: token })));
    expect(tally(answers)).toEqual({ 200: 1, 401: 29 });
    const userId = (await storedUser(String(claims.email)))!.id;
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", userId)).toBe(1);
  });

  it("remembers a taken id_token until it would no longer verify, and the hourly clean-up forgets it after", async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = identityClaims({ aud: "google-web-client", iat: now, exp: now + 600 });
    const token = await signedIdToken("google", claims);
    expect((await idTokenSignIn("google", { id_token: token })).status).toBe(200);
    const hash = await sha256Hex(`${env.OAUTH.google.issuer}\n${token.slice(0, token.lastIndexOf("."))}`);
    const row = await env.DB.prepare("SELECT expires_at FROM oauth_id_token_uses WHERE token_hash = ?")
      .bind(hash)
      .first<number>("expires_at");
    expect(row).toBe((now + 600 + CLOCK_TOLERANCE_SECONDS) * 1000);
    await env.DB.prepare("UPDATE oauth_id_token_uses SET expires_at = ? WHERE token_hash = ?")
      .bind(Date.now() - 1, hash)
      .run();
    await fireCron();
    expect(await count("SELECT count(*) AS n FROM oauth_id_token_uses WHERE token_hash = ?", hash)).toBe(0);
  });

  it("answers 404 for a provider that is not configured, and for GitHub, which issues no id_tokens", async () => {
    const token = await signedIdToken("google", identityClaims({ aud: "google-web-client" }));
    expect(await textOf(await idTokenSignIn("facebook", { id_token: token }))).toEqual({
      status: 404,
      type: TEXT,
      body: AuthMessage.unknownProvider,
    });
    expect(await textOf(await idTokenSignIn("github", { id_token: token }))).toEqual({
      status: 404,
      type: TEXT,
      body: AuthMessage.noIdTokens,
    });
  });

  it("answers 400 for a missing or malformed id_token or nonce", async () => {
    expect(await textOf(await idTokenSignIn("google", {}))).toEqual({
      status: 400,
      type: TEXT,
      body: AuthMessage.idTokenRequired,
    });
    expect(await textOf(await idTokenSignIn("google", { id_token: 7 }))).toEqual({
      status: 400,
      type: TEXT,
      body: AuthMessage.idTokenStrings,
    });
    expect(await textOf(await idTokenSignIn("google", { id_token: "x", nonce: 7 }))).toEqual({
      status: 400,
      type: TEXT,
      body: AuthMessage.idTokenStrings,
    });
  });

  it("answers 503 when the provider cannot be reached", async () => {
    const token = await signedIdToken("google", identityClaims({ aud: "google-web-client" }));
    const response = await callWithEnv(
      { OAUTH_GOOGLE_ISSUER: `http://127.0.0.1:${smtpPort("refused")}` },
      "POST",
      "/auth/oauth/google/id-token",
      { id_token: token },
    );
    expect(await textOf(response)).toEqual({ status: 503, type: TEXT, body: AuthMessage.providerUnavailable });
  });
});
