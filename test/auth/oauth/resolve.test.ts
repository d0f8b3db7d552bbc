import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { base32Decode, stepAt, totpAt } from "../../../src/lib/totp";
import {
  account,
  bearer,
  postLogin,
  logIn,
  me,
  NEW_PASSWORD,
  passwordChangedText,
  quietRegister,
  reset,
  resetCode,
  sessionIdOf,
  storedUser,
  type Tokens,
} from "../../support/accounts";
import { call, count, JSON_TYPE, jsonOf, PASSWORD, randomEmail, tally, TEXT, textOf } from "../../support/app";
import {
  exchangeLoginCode,
  identityClaims,
  idTokenSignIn,
  signedIdToken,
  socialLogIn,
  webSignIn,
} from "../../support/oauth";
import { RECENT_SIGN_IN_MS } from "../../../src/auth/policy";
import { mailsWithSubject, Subject } from "../../support/mail";
import { maskEmail } from "../../../src/lib/log";
import { registeredPasskey } from "../passkeys/support";

/**
 * What a social sign-in does to accounts (src/auth/oauth/resolve.ts and store.ts): the linking rule, the
 * squatter's account taken over, accounts without a password, unlinking, and the gate's second factor.
 */

/** A native sign-in with Google's web client id and `claims`: the answer. */
async function nativeSignIn(claims: Record<string, unknown>): Promise<Response> {
  return idTokenSignIn("google", { id_token: await signedIdToken("google", { aud: "google-web-client", ...claims }) });
}

async function nativeTokens(claims: Record<string, unknown>): Promise<Tokens> {
  const response = await nativeSignIn(claims);
  expect(response.status).toBe(200);
  return response.json();
}

const idOf = async (tokens: Tokens) => Number(((await (await me(tokens.token)).json()) as { id: number }).id);

/** Turns TOTP on for the caller (no password needed for a fresh session of an account without one): the secret. */
async function turnOnTotp(token: string, password?: string): Promise<Uint8Array> {
  const enrolled = (await (
    await call("POST", "/auth/mfa/totp", password === undefined ? {} : { password }, bearer(token))
  ).json()) as { secret: string };
  const secret = base32Decode(enrolled.secret);
  expect(
    (await call("POST", "/auth/mfa/totp/confirm", { code: await totpAt(secret, stepAt(Date.now())) }, bearer(token)))
      .status,
  ).toBe(200);
  return secret;
}

/** Moves the session of `token` back so that it was opened longer ago than a step-up accepts. */
async function ageSession(token: string): Promise<void> {
  await env.DB.prepare("UPDATE sessions SET created_at = ? WHERE id = ?")
    .bind(Date.now() - RECENT_SIGN_IN_MS - 1000, sessionIdOf(token))
    .run();
}

describe("account resolution", () => {
  it("signs a known identity in to its account, whatever address it shows now", async () => {
    const sub = `sub-${crypto.randomUUID()}`;
    const email = randomEmail("first");
    const first = await nativeTokens({ sub, email, email_verified: true });
    const later = randomEmail("later");
    const again = await nativeTokens({ sub, email: later, email_verified: false });
    expect(await idOf(again)).toBe(await idOf(first));
    expect(await jsonOf(await me(again.token))).toMatchObject({
      body: { email, identities: [{ provider: "google", email: later }] },
    });
    expect(await storedUser(later)).toBeNull();
  });

  it("makes a new verified account without a password when no account holds the address", async () => {
    const claims = identityClaims();
    const tokens = await socialLogIn("google", claims);
    const user = await storedUser(String(claims.email));
    expect(user).toMatchObject({ isVerified: 1, password: "!" });
    expect(await jsonOf(await me(tokens.token))).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: {
        id: user!.id,
        email: claims.email,
        verified: true,
        created_at: new Date(user!.createdAt).toISOString(),
        mfa: { totp: false, recovery_codes_remaining: 0 },
        identities: [{ provider: "google", email: claims.email, created_at: new Date(user!.createdAt).toISOString() }],
        has_password: false,
      },
    });
  });

  it("links a verified account holding the address, which keeps its password", async () => {
    const email = await account();
    const before = await storedUser(email);
    const tokens = await socialLogIn("google", identityClaims({ email: email.toUpperCase() }));
    expect(await idOf(tokens)).toBe(before!.id);
    expect(await jsonOf(await me(tokens.token))).toMatchObject({
      body: { identities: [{ provider: "google", email }], has_password: true },
    });
    expect((await postLogin(email)).status).toBe(200);
    expect(await storedUser(email)).toMatchObject({ password: before!.password, sign_in_epoch: before!.sign_in_epoch });
  });

  it("tells the owner when a provider is linked to their account (N4): the provider, the address it showed, and how to unlink it", async () => {
    const email = await account();
    const claims = identityClaims({ email });
    await socialLogIn("google", claims);
    const notices = await mailsWithSubject(email, "A Sign-In Provider Was Linked to Your Account");
    expect(notices.map((mail) => mail.text)).toEqual([
      `A sign-in with google (${maskEmail(email)}) was linked to your account: it signs in without your password.\n` +
        "If this was not you, remove it at once: sign in, then unlink it (DELETE /auth/identities/google; your linked sign-ins are listed in your account's security settings), and change your password.",
    ]);
    // Signing in again with the linked identity links nothing new, and mails nothing.
    await socialLogIn("google", claims);
    expect(await mailsWithSubject(email, "A Sign-In Provider Was Linked to Your Account")).toHaveLength(1);
  });

  it("names the linked sign-ins in the notice of a reset (N4)", async () => {
    const email = await account();
    await socialLogIn("google", identityClaims({ email }));
    await socialLogIn("apple", identityClaims({ email }));
    expect((await reset(email, await resetCode(email))).status).toBe(200);
    expect((await mailsWithSubject(email, Subject.passwordChanged)).map((mail) => mail.text)).toEqual([
      passwordChangedText(["google", "apple"]),
    ]);
  });

  it("hands a squatter's unverified account to the owner of the address: verified, its password gone, its sessions and codes ended", async () => {
    const email = randomEmail("owner");
    expect((await quietRegister(email, "the squatter's password")).status).toBe(201);
    const squatted = await storedUser(email);
    expect(await count("SELECT count(*) AS n FROM one_time_codes WHERE user_id = ?", squatted!.id)).toBe(1);
    // No sign-in opens a session for an unverified account; one written here stands for any the squatter could hold.
    await env.DB.prepare(
      "INSERT INTO sessions (id, user_id, created_at, last_used_at, expires_at) VALUES (?, ?, ?, ?, ?)",
    )
      .bind("squatter-session", squatted!.id, Date.now(), Date.now(), Date.now() + 60_000)
      .run();

    const tokens = await socialLogIn("google", identityClaims({ email }));
    expect(await idOf(tokens)).toBe(squatted!.id);
    expect(await storedUser(email)).toMatchObject({
      isVerified: 1,
      password: "!",
      sign_in_epoch: squatted!.sign_in_epoch + 1,
    });
    expect(await textOf(await postLogin(email, "the squatter's password"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidCredentials,
    });
    expect(await count("SELECT count(*) AS n FROM one_time_codes WHERE user_id = ?", squatted!.id)).toBe(0);
    expect(await count("SELECT count(*) AS n FROM sessions WHERE id = 'squatter-session'")).toBe(0);
    expect(await jsonOf(await me(tokens.token))).toMatchObject({ body: { verified: true, has_password: false } });
  });

  it("refuses to make or link an account for an address that is reserved, or whose account has another identity of the provider (409)", async () => {
    const reservedEmail = randomEmail("reserved");
    const holder = await storedUser(await account());
    await env.DB.prepare(
      "INSERT INTO email_change_reverts (token_hash, user_id, old_email, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
    )
      .bind(crypto.randomUUID(), holder!.id, reservedEmail, Date.now(), Date.now() + 60_000)
      .run();
    const conflict = {
      status: 409,
      type: JSON_TYPE,
      body: { error: "account_conflict", error_description: AuthMessage.accountConflict },
    };
    expect(await jsonOf(await nativeSignIn(identityClaims({ email: reservedEmail })))).toEqual(conflict);
    expect(await storedUser(reservedEmail)).toBeNull();

    const email = randomEmail("linked");
    await nativeTokens(identityClaims({ email }));
    expect(await jsonOf(await nativeSignIn(identityClaims({ email })))).toEqual(conflict);
    const web = await webSignIn("google", { claims: identityClaims({ email }) });
    expect(Object.fromEntries(web.app.searchParams)).toEqual({ error: "account_conflict", state: "app-state" });
  });

  it("makes one account and one identity for 10 concurrent first sign-ins of a new identity", async () => {
    const claims = identityClaims();
    // Ten tokens of the identity (each id_token signs in once).
    const tokens = await Promise.all(
      Array.from({ length: 10 }, () =>
        signedIdToken("google", { aud: "google-web-client", ...claims, jti: crypto.randomUUID() }),
      ),
    );
    const answers = await Promise.all(tokens.map((token) => idTokenSignIn("google", { id_token: token })));
    expect(tally(answers)).toEqual({ 200: 10 });
    expect(await count("SELECT count(*) AS n FROM users WHERE email = ?", claims.email)).toBe(1);
    expect(await count("SELECT count(*) AS n FROM oauth_identities WHERE subject = ?", claims.sub)).toBe(1);
  });
});

/** DELETE /auth/identities/{provider} with the step-up `body` (a recent sign-in of an account without a password needs none). */
function unlink(token: string, provider: string, body: Record<string, unknown> = {}): Promise<Response> {
  return call("DELETE", `/auth/identities/${provider}`, body, bearer(token));
}

describe("DELETE /auth/identities/{provider}", () => {
  it("unlinks a provider from an account that has a password, with the password (204), and mails a notice; signing in with it links it again", async () => {
    const email = await account();
    const tokens = await socialLogIn("google", identityClaims({ email }));
    const response = await unlink(tokens.token, "google", { password: PASSWORD });
    expect(response.status).toBe(204);
    expect(await jsonOf(await me(tokens.token))).toMatchObject({ body: { identities: [] } });
    expect(
      (await mailsWithSubject(email, "A Sign-In Provider Was Unlinked from Your Account")).map((m) => m.text),
    ).toEqual([
      "The sign-in with google was unlinked from your account and no longer signs in. If this was not you, change your password now: whoever did it knows it.",
    ]);
    expect((await nativeSignIn(identityClaims({ email }))).status).toBe(200);
  });

  it("needs what removing a passkey needs (N10): a missing password is a 401 not counted, a wrong one a 401 counted on the session, and the identity stays", async () => {
    const email = await account();
    const tokens = await socialLogIn("google", identityClaims({ email }));
    expect(await textOf(await unlink(tokens.token, "google"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.passwordRequired,
    });
    expect(await textOf(await unlink(tokens.token, "google", { password: "not the password" }))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.wrongPassword,
    });
    expect(await count("SELECT password_failures AS n FROM sessions WHERE id = ?", sessionIdOf(tokens.token))).toBe(1);
    expect(await jsonOf(await me(tokens.token))).toMatchObject({ body: { identities: [{ provider: "google" }] } });
    expect(await textOf(await unlink(tokens.token, "google", { password: 7 }))).toEqual({
      status: 400,
      type: TEXT,
      body: AuthMessage.passwordString,
    });
  });

  it("asks an account without a password for a sign-in within RECENT_SIGN_IN_MS, as the other step-ups do (N10)", async () => {
    const claims = identityClaims();
    const tokens = await socialLogIn("google", claims);
    await socialLogIn("apple", identityClaims({ email: claims.email }));
    await env.DB.prepare("UPDATE sessions SET created_at = ? WHERE id = ?")
      .bind(Date.now() - RECENT_SIGN_IN_MS - 1_000, sessionIdOf(tokens.token))
      .run();
    expect(await textOf(await unlink(tokens.token, "google"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.signInAgain,
    });
    expect(await count("SELECT count(*) AS n FROM oauth_identities WHERE subject = ?", claims.sub)).toBe(1);
  });

  it("answers 409 for the last way in of an account without a password, and 204 while another provider remains", async () => {
    const claims = identityClaims();
    const tokens = await socialLogIn("google", claims);
    const last = { status: 409, type: TEXT, body: AuthMessage.lastWayIn };
    expect(await textOf(await unlink(tokens.token, "google"))).toEqual(last);
    expect(await count("SELECT count(*) AS n FROM oauth_identities WHERE subject = ?", claims.sub)).toBe(1);

    await socialLogIn("apple", identityClaims({ email: claims.email }));
    expect((await unlink(tokens.token, "google")).status).toBe(204);
    expect(await textOf(await unlink(tokens.token, "apple"))).toEqual(last);
  });

  it("counts a passkey as a way in (N5): an account without a password unlinks its last provider while it has a passkey, and then keeps its last passkey", async () => {
    const claims = identityClaims();
    const tokens = await socialLogIn("google", claims);
    const { id } = await registeredPasskey(tokens.token);
    expect((await unlink(tokens.token, "google")).status).toBe(204);
    expect(await count("SELECT count(*) AS n FROM oauth_identities WHERE subject = ?", claims.sub)).toBe(0);
    expect(await textOf(await call("DELETE", `/auth/passkeys/${id}`, {}, bearer(tokens.token)))).toEqual({
      status: 409,
      type: TEXT,
      body: AuthMessage.lastWayIn,
    });
    expect(await count("SELECT count(*) AS n FROM passkeys WHERE id = ?", id)).toBe(1);
  });

  it("unlinks one of two concurrent unlinks of an account's last two ways in, never both", async () => {
    const claims = identityClaims();
    const tokens = await socialLogIn("google", claims);
    await socialLogIn("apple", identityClaims({ email: claims.email }));
    const answers = await Promise.all(
      ["google", "apple", "google", "apple"].map((provider) => unlink(tokens.token, provider)),
    );
    expect(tally(answers)).toEqual({ 204: 1, 404: 1, 409: 2 });
    expect(await count("SELECT count(*) AS n FROM oauth_identities WHERE user_id = ?", await idOf(tokens))).toBe(1);
  });

  it("answers 404 for a provider not linked, and 401 without a live session", async () => {
    const tokens = await logIn(await account());
    expect(await textOf(await unlink(tokens.token, "google", { password: PASSWORD }))).toEqual({
      status: 404,
      type: TEXT,
      body: AuthMessage.identityNotLinked,
    });
    expect((await call("DELETE", "/auth/identities/google", { password: PASSWORD })).status).toBe(401);
  });
});

describe("accounts without a password", () => {
  it("answers a password login exactly as a wrong password", async () => {
    const claims = identityClaims();
    await socialLogIn("google", claims);
    for (const password of [PASSWORD, "!"]) {
      expect(await textOf(await postLogin(String(claims.email), password))).toEqual({
        status: 401,
        type: TEXT,
        body: AuthMessage.invalidCredentials,
      });
    }
  });

  it("sets a first password with forgot/reset-password, and the provider still signs in", async () => {
    const claims = identityClaims();
    const tokens = await socialLogIn("google", claims);
    const email = String(claims.email);
    const before = await storedUser(email);
    expect(await textOf(await reset(email, await resetCode(email)))).toEqual({
      status: 200,
      type: TEXT,
      body: AuthMessage.passwordReset,
    });
    expect((await postLogin(email, NEW_PASSWORD)).status).toBe(200);
    expect((await storedUser(email))!.sign_in_epoch).toBe(before!.sign_in_epoch + 1);
    // The reset ended the sessions; the provider's identity is kept.
    expect((await me(tokens.token)).status).toBe(401);
    const again = await socialLogIn("google", claims);
    expect(await jsonOf(await me(again.token))).toMatchObject({
      body: { has_password: true, identities: [{ provider: "google" }] },
    });
  });

  it("passes a step-up with a session opened in the last 10 minutes, without a password", async () => {
    const tokens = await socialLogIn("google", identityClaims());
    const response = await call("DELETE", "/auth/account", {}, bearer(tokens.token));
    expect(response.status).toBe(204);
  });

  it("refuses a step-up with an older session: 401, sign in again", async () => {
    const tokens = await socialLogIn("google", identityClaims());
    await ageSession(tokens.token);
    const again = { status: 401, type: TEXT, body: AuthMessage.signInAgain };
    expect(await textOf(await call("DELETE", "/auth/account", {}, bearer(tokens.token)))).toEqual(again);
    expect(
      await textOf(await call("POST", "/auth/change-email", { new_email: randomEmail() }, bearer(tokens.token))),
    ).toEqual(again);
    expect(await textOf(await call("POST", "/auth/mfa/totp", {}, bearer(tokens.token)))).toEqual(again);
    // Not a wrong password: the session is not used up by these.
    expect((await me(tokens.token)).status).toBe(200);
  });

  it("passes a step-up of an older session with the TOTP code when TOTP is on", async () => {
    const tokens = await socialLogIn("google", identityClaims());
    const secret = await turnOnTotp(tokens.token);
    await ageSession(tokens.token);
    const code = await totpAt(secret, stepAt(Date.now()) + 1);
    expect((await call("DELETE", "/auth/account", { code }, bearer(tokens.token))).status).toBe(204);
  });

  it("still asks an account with a password for it (400 when missing)", async () => {
    const tokens = await logIn(await account());
    expect(await textOf(await call("DELETE", "/auth/account", {}, bearer(tokens.token)))).toEqual({
      status: 400,
      type: TEXT,
      body: AuthMessage.passwordRequired,
    });
    expect((await me(tokens.token)).status).toBe(200);
  });
});

describe("the gate for social sign-in", () => {
  it("answers mfa_required from both flows for an account with TOTP on, and the second step records fed and the provider", async () => {
    const claims = identityClaims();
    const tokens = await socialLogIn("google", claims);
    const secret = await turnOnTotp(tokens.token);

    const web = await webSignIn("google", { claims });
    const challenge = (await (
      await exchangeLoginCode(web.app.searchParams.get("code"), web.verifier)
    ).json()) as Record<string, unknown>;
    expect(challenge).toEqual({ mfa_required: true, mfa_token: expect.any(String), expires_in: 300 });
    const native = await nativeSignIn(claims);
    expect(await jsonOf(native)).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: { mfa_required: true, mfa_token: expect.any(String), expires_in: 300 },
    });

    const verified = await call("POST", "/auth/mfa/verify", {
      mfa_token: challenge.mfa_token,
      code: await totpAt(secret, stepAt(Date.now()) + 1),
    });
    expect(verified.status).toBe(200);
    const { token } = (await verified.json()) as Tokens;
    const sessions = (await (await call("GET", "/auth/sessions", undefined, bearer(token))).json()) as Array<
      Record<string, unknown>
    >;
    expect(sessions.find((session) => session.current)).toMatchObject({
      amr: ["fed", "otp", "mfa"],
      provider: "google",
    });
  });
});
