import { env } from "cloudflare:workers";
import { decodeProtectedHeader, importJWK, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { appleClientSecret } from "../../../src/auth/oauth/apple";
import { sha256Hex } from "../../../src/lib/crypto";
import { bearer, storedUser } from "../../support/accounts";
import { call, callWithEnv, count, JSON_TYPE, randomEmail, tally, TEXT, textOf } from "../../support/app";
import { smtpPort } from "../../support/mail";
import {
  APP_REDIRECT,
  atProvider,
  authorize,
  callback,
  exchangeLoginCode,
  identityClaims,
  locationOf,
  NATIVE_REDIRECT,
  pkcePair,
  scriptGitHub,
  scriptSignIn,
  tokenRequestOf,
  webSignIn,
} from "../../support/oauth";
import {
  APPLE_CLIENT_SECRET_RENEW_MS,
  APPLE_CLIENT_SECRET_TTL_MS,
  LOGIN_CODE_TTL_MS,
  STATE_TTL_MS,
} from "../../../src/auth/policy";

/**
 * The web flow of social sign-in (src/auth/oauth/web.ts, exchange.ts, token.ts) against real providers on
 * loopback (test/oauth/servers.ts): two OpenID providers configured as google and apple, and a fake GitHub.
 */

/** The authorize request an app makes, with a fresh PKCE pair. */
async function start(provider = "google", extra: Record<string, string | undefined> = {}) {
  const { verifier, challenge } = await pkcePair();
  const response = await authorize(provider, {
    redirect_uri: APP_REDIRECT,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "app-state",
    ...extra,
  });
  return { response, verifier, challenge };
}

const storedState = (stateHash: string) =>
  env.DB.prepare("SELECT * FROM oauth_states WHERE state_hash = ?").bind(stateHash).first<Record<string, unknown>>();

describe("GET /auth/oauth/{provider}/authorize", () => {
  it("redirects to the provider's authorization endpoint with the code flow, the client id, its callback, openid email, and a state, nonce and S256 challenge of its own", async () => {
    const { response, challenge } = await start();
    expect(response.status).toBe(302);
    expect(response.headers.get("set-cookie")).toBeNull();
    const url = locationOf(response);
    expect(`${url.origin}${url.pathname}`).toBe(`${env.OAUTH.google.issuer}/authorize`);
    const query = Object.fromEntries(url.searchParams);
    expect(query).toEqual({
      response_type: "code",
      client_id: "google-web-client",
      redirect_uri: "http://api.test/auth/oauth/google/callback",
      scope: "openid email",
      state: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      nonce: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      code_challenge_method: "S256",
    });
    expect(query.code_challenge).not.toBe(challenge);

    // Kept server-side under the state's SHA-256 only, with everything the callback needs, for 10 minutes.
    const row = await storedState(await sha256Hex(query.state!));
    expect(row).toMatchObject({
      provider: "google",
      redirect_uri: APP_REDIRECT,
      app_state: "app-state",
      code_challenge: challenge,
      nonce: query.nonce,
    });
    expect(await count("SELECT count(*) AS n FROM oauth_states WHERE state_hash = ?", query.state)).toBe(0);
    const verifierHash = new Uint8Array(
      await crypto.subtle.digest("SHA-256", new TextEncoder().encode(String(row!.code_verifier))),
    );
    expect(
      btoa(String.fromCharCode(...verifierHash))
        .replace(/\+/g, "-")
        .replace(/\//g, "_")
        .replace(/=+$/, ""),
    ).toBe(query.code_challenge);
    expect(Number(row!.expires_at) - Date.now()).toBeGreaterThan(STATE_TTL_MS - 5_000);
    expect(Number(row!.expires_at) - Date.now()).toBeLessThanOrEqual(STATE_TTL_MS);
  });

  it("asks GitHub for its scopes, and Apple to post its answer", async () => {
    const github = locationOf((await start("github")).response);
    expect(`${github.origin}${github.pathname}`).toBe(`${env.OAUTH.github.url}/login/oauth/authorize`);
    expect(github.searchParams.get("scope")).toBe("read:user user:email");
    const apple = locationOf((await start("apple")).response);
    expect(apple.searchParams.get("response_mode")).toBe("form_post");
    expect(apple.searchParams.get("client_id")).toBe("com.example.web");
  });

  it("takes an app's custom scheme URL of OAUTH_REDIRECT_URLS", async () => {
    const { response } = await start("google", { redirect_uri: NATIVE_REDIRECT });
    expect(response.status).toBe(302);
  });

  it("answers 404 for a provider that is not configured, and for one without a client secret", async () => {
    expect(await textOf((await start("facebook")).response)).toEqual({
      status: 404,
      type: TEXT,
      body: AuthMessage.unknownProvider,
    });
    expect(await textOf((await start("acme")).response)).toEqual({
      status: 404,
      type: TEXT,
      body: AuthMessage.noWebSignIn,
    });
  });

  it("refuses a redirect_uri that is not exactly one of OAUTH_REDIRECT_URLS with a 400, no redirect and no state", async () => {
    const before = await count("SELECT count(*) AS n FROM oauth_states WHERE app_state = 'evil'");
    for (const uri of [
      "https://evil.example/oauth/done",
      `${APP_REDIRECT}/`,
      `${APP_REDIRECT}?x=1`,
      "HTTPS://app.example/oauth/done",
      "javascript:alert(1)",
    ]) {
      const { response } = await start("google", { redirect_uri: uri, state: "evil" });
      expect(await textOf(response)).toEqual({ status: 400, type: TEXT, body: AuthMessage.redirectUriNotAllowed });
      expect(response.headers.get("location")).toBeNull();
    }
    expect(await count("SELECT count(*) AS n FROM oauth_states WHERE app_state = 'evil'")).toBe(before);
  });

  it("refuses a request without the app's PKCE challenge, with another method or a malformed one", async () => {
    const cases: Array<[Record<string, string | undefined>, string]> = [
      [{ code_challenge: undefined }, AuthMessage.codeChallengeRequired],
      [{ code_challenge_method: "plain" }, AuthMessage.codeChallengeMethod],
      [{ code_challenge_method: undefined }, AuthMessage.codeChallengeMethod],
      [{ code_challenge: "too-short" }, AuthMessage.codeChallengeInvalid],
      [{ redirect_uri: undefined }, AuthMessage.redirectUriRequired],
      [{ state: "x".repeat(513) }, AuthMessage.appStateInvalid],
    ];
    for (const [change, message] of cases) {
      expect(await textOf((await start("google", change)).response)).toEqual({
        status: 400,
        type: TEXT,
        body: message,
      });
    }
  });

  it("answers 503 when the provider's discovery document cannot be reached", async () => {
    const { challenge } = await pkcePair();
    const query = new URLSearchParams({
      redirect_uri: APP_REDIRECT,
      code_challenge: challenge,
      code_challenge_method: "S256",
    });
    const response = await callWithEnv(
      { OAUTH_GOOGLE_ISSUER: `http://127.0.0.1:${smtpPort("refused")}` },
      "GET",
      `/auth/oauth/google/authorize?${query.toString()}`,
    );
    expect(await textOf(response)).toEqual({ status: 503, type: TEXT, body: AuthMessage.providerUnavailable });
  });
});

describe("GET /auth/oauth/{provider}/callback", () => {
  it("exchanges the code, makes the account and sends the browser back to the app with a one-time login code and the app's state", async () => {
    const claims = identityClaims();
    const { response, challenge } = await start();
    const toProvider = locationOf(response);
    await scriptSignIn("google", { nonce: toProvider.searchParams.get("nonce")!, claims });
    const back = await callback(await atProvider(toProvider));
    expect(back.status).toBe(302);
    const app = locationOf(back);
    expect(`${app.origin}${app.pathname}`).toBe(APP_REDIRECT);
    expect([...app.searchParams.keys()].sort()).toEqual(["code", "state"]);
    expect(app.searchParams.get("state")).toBe("app-state");
    const code = app.searchParams.get("code")!;
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Stored hashed, bound to the app's challenge, for 60 seconds; the state is gone.
    const row = await env.DB.prepare("SELECT * FROM oauth_login_codes WHERE code_hash = ?")
      .bind(await sha256Hex(code))
      .first<Record<string, number | string>>();
    expect(row).toMatchObject({
      provider: "google",
      code_challenge: challenge,
      user_id: (await storedUser(String(claims.email)))!.id,
    });
    expect(Number(row!.expires_at) - Date.now()).toBeLessThanOrEqual(LOGIN_CODE_TTL_MS);
    expect(await storedState(await sha256Hex(toProvider.searchParams.get("state")!))).toBeNull();
  });

  it("hands back no state when the app sent none, and returns to an app scheme URL", async () => {
    const { app } = await webSignIn(
      "google",
      { claims: identityClaims() },
      { redirectUri: NATIVE_REDIRECT, state: null },
    );
    expect(app.protocol).toBe("com.example.app:");
    expect(app.pathname).toBe("/oauth");
    expect([...app.searchParams.keys()]).toEqual(["code"]);
  });

  it("answers 400 without a redirect for a state that is used, unknown, missing, expired or another provider's", async () => {
    const { response } = await start();
    const toProvider = locationOf(response);
    await scriptSignIn("google", { nonce: toProvider.searchParams.get("nonce")!, claims: identityClaims() });
    const back = await atProvider(toProvider);
    expect((await callback(back)).status).toBe(302);
    const unknownState = (res: Response) => textOf(res);
    const refused = { status: 400, type: TEXT, body: AuthMessage.unknownState };
    expect(await unknownState(await callback(back))).toEqual(refused);
    expect(await unknownState(await call("GET", "/auth/oauth/google/callback?code=x&state=nothing-we-issued"))).toEqual(
      refused,
    );
    expect(await unknownState(await call("GET", "/auth/oauth/google/callback?code=x"))).toEqual(refused);

    const expired = locationOf((await start()).response).searchParams.get("state")!;
    await env.DB.prepare("UPDATE oauth_states SET expires_at = ? WHERE state_hash = ?")
      .bind(Date.now() - 1, await sha256Hex(expired))
      .run();
    expect(await unknownState(await call("GET", `/auth/oauth/google/callback?code=x&state=${expired}`))).toEqual(
      refused,
    );

    const githubState = locationOf((await start("github")).response).searchParams.get("state")!;
    expect(await unknownState(await call("GET", `/auth/oauth/google/callback?code=x&state=${githubState}`))).toEqual(
      refused,
    );
    // Claimed by that try: it is of no use to GitHub's callback either.
    expect(await unknownState(await call("GET", `/auth/oauth/github/callback?code=x&state=${githubState}`))).toEqual(
      refused,
    );
  });

  it("claims a state once: of 10 concurrent callbacks with it, exactly one is sent on to the app", async () => {
    const { response } = await start();
    const toProvider = locationOf(response);
    await scriptSignIn("google", { nonce: toProvider.searchParams.get("nonce")!, claims: identityClaims() });
    const back = await atProvider(toProvider);
    const answers = await Promise.all(Array.from({ length: 10 }, () => callback(back)));
    expect(tally(answers)).toEqual({ 302: 1, 400: 9 });
  });

  it("hands the provider's error to the app, without a code", async () => {
    const { app } = await webSignIn("google", { authorizeError: "access_denied" });
    expect(Object.fromEntries(app.searchParams)).toEqual({ error: "access_denied", state: "app-state" });
  });

  it("answers error=invalid_token for an id_token with a bad signature, another issuer or audience, an expiry passed, or another nonce", async () => {
    const now = Math.floor(Date.now() / 1000);
    const scripts = [
      { claims: identityClaims(), corruptSignature: true },
      { claims: identityClaims({ iss: "https://accounts.evil.example" }) },
      { claims: identityClaims({ aud: "another-client" }) },
      { claims: identityClaims({ exp: now - 120, iat: now - 3720 }) },
      { claims: identityClaims({ nonce: "a nonce of another sign-in" }) },
    ];
    for (const script of scripts) {
      const { app } = await webSignIn("google", script);
      expect(Object.fromEntries(app.searchParams)).toEqual({ error: "invalid_token", state: "app-state" });
      expect(await storedUser(String(script.claims.email))).toBeNull();
    }
  });

  it("answers error=invalid_grant when the provider's token endpoint refuses the code", async () => {
    const { app } = await webSignIn("google", { claims: identityClaims(), tokenError: "invalid_grant" });
    expect(Object.fromEntries(app.searchParams)).toEqual({ error: "invalid_grant", state: "app-state" });
  });

  it("answers error=email_not_verified, and makes no account, for an address the provider does not vouch for", async () => {
    for (const emailVerified of [false, "false", null]) {
      const claims = identityClaims({ email_verified: emailVerified });
      const { app } = await webSignIn("google", { claims });
      expect(Object.fromEntries(app.searchParams)).toEqual({ error: "email_not_verified", state: "app-state" });
      expect(await storedUser(String(claims.email))).toBeNull();
    }
  });

  it("takes Apple's answer posted as a form, and authenticates with a client secret JWT signed with the Apple key", async () => {
    const claims = identityClaims({ email_verified: "true" });
    const { response, verifier } = await start("apple");
    const toProvider = locationOf(response);
    const nonce = toProvider.searchParams.get("nonce")!;
    await scriptSignIn("apple", { nonce, claims });
    const back = await atProvider(toProvider);
    const form = new URLSearchParams({ code: back.searchParams.get("code")!, state: back.searchParams.get("state")! });
    const posted = await call("POST", "/auth/oauth/apple/callback", form.toString(), {
      "Content-Type": "application/x-www-form-urlencoded",
    });
    expect(posted.status).toBe(302);
    const app = locationOf(posted);
    expect((await exchangeLoginCode(app.searchParams.get("code"), verifier)).status).toBe(200);

    const sent = await tokenRequestOf("apple", nonce);
    expect(sent).toMatchObject({
      grant_type: "authorization_code",
      client_id: "com.example.web",
      redirect_uri: "http://api.test/auth/oauth/apple/callback",
    });
    const secret = sent!.client_secret!;
    expect(decodeProtectedHeader(secret)).toEqual({ alg: "ES256", kid: env.OAUTH.apple.keyId });
    const { payload } = await jwtVerify(secret, await importJWK(env.OAUTH.apple.publicJwk, "ES256"), {
      issuer: env.OAUTH.apple.teamId,
      subject: "com.example.web",
      audience: env.OAUTH.apple.issuer,
    });
    expect(payload.exp! - payload.iat!).toBeGreaterThan(0);
    expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(15_777_000);
  });

  it("signs in with GitHub: its numeric user id, and the primary address when GitHub has verified it; its API down is temporarily_unavailable", async () => {
    const email = randomEmail("octo");
    const id = Math.floor(Math.random() * 1e9);
    const signIn = async (emails: Array<{ email: string; primary: boolean; verified: boolean }>) => {
      const { response, verifier } = await start("github");
      const toGitHub = locationOf(response);
      await scriptGitHub({ state: toGitHub.searchParams.get("state")!, id, emails });
      const back = await callback(await atProvider(toGitHub));
      return { app: locationOf(back), verifier };
    };
    const unverified = await signIn([
      { email, primary: true, verified: false },
      { email: randomEmail(), primary: false, verified: true },
    ]);
    expect(Object.fromEntries(unverified.app.searchParams)).toEqual({
      error: "email_not_verified",
      state: "app-state",
    });

    const down = await start("github");
    const toGitHub = locationOf(down.response);
    await scriptGitHub({ state: toGitHub.searchParams.get("state")!, id, apiStatus: 503 });
    expect(Object.fromEntries(locationOf(await callback(await atProvider(toGitHub))).searchParams)).toEqual({
      error: "temporarily_unavailable",
      state: "app-state",
    });

    const { app, verifier } = await signIn([
      { email: randomEmail(), primary: false, verified: true },
      { email: email.toUpperCase(), primary: true, verified: true },
    ]);
    const tokens = (await (await exchangeLoginCode(app.searchParams.get("code"), verifier)).json()) as {
      token: string;
    };
    const identity = await env.DB.prepare("SELECT * FROM oauth_identities WHERE provider = 'github' AND subject = ?")
      .bind(String(id))
      .first<Record<string, unknown>>();
    expect(identity).toMatchObject({ issuer: env.OAUTH.github.url, email, user_id: (await storedUser(email))!.id });
    const me = await call("GET", "/auth/me", undefined, bearer(tokens.token));
    expect(await me.json()).toMatchObject({ email, identities: [{ provider: "github", email }] });
  });
});

describe("POST /auth/oauth/token", () => {
  it("answers the tokens exactly like a login, for a session that records the provider and fed", async () => {
    const { app, verifier } = await webSignIn("google", { claims: identityClaims() });
    const response = await exchangeLoginCode(app.searchParams.get("code"), verifier);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    const tokens = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(tokens).sort()).toEqual(["device_token", "expires_in", "refresh_token", "token"]);
    const sessions = (await (
      await call("GET", "/auth/sessions", undefined, bearer(String(tokens.token)))
    ).json()) as Array<Record<string, unknown>>;
    expect(sessions).toEqual([expect.objectContaining({ amr: ["fed"], provider: "google", current: true })]);
  });

  it("spends the code on a wrong code_verifier (401), so the right one then gets a 401 too", async () => {
    const { app, verifier } = await webSignIn("google", { claims: identityClaims() });
    const code = app.searchParams.get("code");
    const invalid = { status: 401, type: TEXT, body: AuthMessage.invalidLoginCode };
    expect(await textOf(await exchangeLoginCode(code, (await pkcePair()).verifier))).toEqual(invalid);
    expect(await textOf(await exchangeLoginCode(code, verifier))).toEqual(invalid);
  });

  it("answers 401 for a code used already, unknown, or past its 60 seconds", async () => {
    const invalid = { status: 401, type: TEXT, body: AuthMessage.invalidLoginCode };
    const first = await webSignIn("google", { claims: identityClaims() });
    expect((await exchangeLoginCode(first.app.searchParams.get("code"), first.verifier)).status).toBe(200);
    expect(await textOf(await exchangeLoginCode(first.app.searchParams.get("code"), first.verifier))).toEqual(invalid);
    expect(await textOf(await exchangeLoginCode("never-issued", first.verifier))).toEqual(invalid);

    const late = await webSignIn("google", { claims: identityClaims() });
    const code = late.app.searchParams.get("code")!;
    await env.DB.prepare("UPDATE oauth_login_codes SET expires_at = ? WHERE code_hash = ?")
      .bind(Date.now() - 1, await sha256Hex(code))
      .run();
    expect(await textOf(await exchangeLoginCode(code, late.verifier))).toEqual(invalid);
  });

  it("answers 400 for missing or malformed fields", async () => {
    expect(await textOf(await call("POST", "/auth/oauth/token", { code: "x" }))).toEqual({
      status: 400,
      type: TEXT,
      body: AuthMessage.loginCodeFields,
    });
    expect(await textOf(await call("POST", "/auth/oauth/token", { code: 1, code_verifier: "x" }))).toEqual({
      status: 400,
      type: TEXT,
      body: AuthMessage.loginCodeStrings,
    });
  });

  it("claims a code once: of 10 concurrent exchanges, exactly one gets a session", async () => {
    const { app, verifier } = await webSignIn("google", { claims: identityClaims() });
    const code = app.searchParams.get("code");
    const answers = await Promise.all(Array.from({ length: 10 }, () => exchangeLoginCode(code, verifier)));
    expect(tally(answers)).toEqual({ 200: 1, 401: 9 });
  });
});

describe("Sign in with Apple's client secret", () => {
  it("is signed once per isolate and signed anew before it expires", async () => {
    const { teamId, keyId, privateKeyPem: privateKey } = env.OAUTH.apple;
    const secret = { kind: "apple" as const, teamId, keyId, privateKey };
    const now = Date.now();
    const first = await appleClientSecret("com.example.renewal", "https://appleid.apple.com", secret, now);
    expect(
      await appleClientSecret(
        "com.example.renewal",
        "https://appleid.apple.com",
        secret,
        now + APPLE_CLIENT_SECRET_TTL_MS - APPLE_CLIENT_SECRET_RENEW_MS - 1000,
      ),
    ).toBe(first);
    const renewed = await appleClientSecret(
      "com.example.renewal",
      "https://appleid.apple.com",
      secret,
      now + APPLE_CLIENT_SECRET_TTL_MS - APPLE_CLIENT_SECRET_RENEW_MS + 1000,
    );
    expect(renewed).not.toBe(first);
    const { payload } = await jwtVerify(renewed, await importJWK(env.OAUTH.apple.publicJwk, "ES256"), {
      issuer: teamId,
      subject: "com.example.renewal",
      audience: "https://appleid.apple.com",
      currentDate: new Date(now + APPLE_CLIENT_SECRET_TTL_MS),
    });
    expect(payload.exp! * 1000).toBeGreaterThan(now + APPLE_CLIENT_SECRET_TTL_MS);
  });
});
