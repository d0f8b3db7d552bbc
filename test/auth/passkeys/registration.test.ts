import * as v from "valibot";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { bearer, expectEnded, logIn, sessionIdOf, storedUser } from "../../support/accounts";
import { call, callWithEnv, count, JSON_TYPE, jsonOf, PASSWORD, tally, TEXT, textOf } from "../../support/app";
import { mailsWithSubject } from "../../support/mail";
import { b64url, fromB64url, SoftwarePasskey } from "./authenticator";
import {
  creationOptions,
  expireChallenge,
  PasskeyAnswer,
  registeredPasskey,
  registerWith,
  registrationOptions,
  requestOptions,
  signedInAccount,
  storedChallenge,
  storedPasskeys,
  totpCode,
  turnOnTotp,
} from "./support";
import { PASSKEY_CHALLENGE_TTL_MS } from "../../../src/auth/policy";

/**
 * Adding a passkey (src/auth/passkeys/registration.ts): the options behind a step-up, then the new
 * credential, made by the software authenticator of ./authenticator.ts exactly as a browser sends it.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

const ADDED = "A Passkey Was Added to Your Account";
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe("POST /auth/passkeys/register/options", () => {
  it("answers the creation options: this RP, the account's 32-byte handle, a fresh challenge, ES256/EdDSA/RS256, a discoverable passkey with user verification", async () => {
    const { email, session } = await signedInAccount();
    const response = await registrationOptions(session.token);
    const { status, type, body } = await jsonOf(response);
    expect({ status, type }).toEqual({ status: 200, type: JSON_TYPE });
    const handle = (await storedUser(email))!;
    expect(body).toEqual({
      options: {
        rp: { id: "localhost", name: "Notes API Test" },
        user: { id: handle.webauthn_handle, name: email, displayName: email },
        challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        pubKeyCredParams: [
          { type: "public-key", alg: -7 },
          { type: "public-key", alg: -8 },
          { type: "public-key", alg: -257 },
        ],
        timeout: PASSKEY_CHALLENGE_TTL_MS,
        excludeCredentials: [],
        authenticatorSelection: { residentKey: "required", requireResidentKey: true, userVerification: "required" },
        attestation: "none",
        extensions: { credProps: true },
      },
    });
    expect(fromB64url(handle.webauthn_handle!)).toHaveLength(32);
  });

  it("gives an account one handle for good, never its id or address, and every account its own, even under a burst", async () => {
    const first = await signedInAccount();
    const second = await signedInAccount();
    // Two sessions of the account, five each (a session allows five password checks in flight).
    const other = await logIn(first.email);
    const burst = await Promise.all(
      Array.from({ length: 10 }, (_, i) => creationOptions((i % 2 ? other : first.session).token)),
    );
    const handles = new Set(burst.map((options) => options.user.id));
    expect(handles.size).toBe(1);
    const [handle] = [...handles];
    expect(handle).toBe((await creationOptions(first.session.token)).user.id);
    const { id } = (await storedUser(first.email))!;
    // 32 random bytes: neither the numeric id (reused after a deletion) nor the address, in any spelling.
    expect(fromB64url(handle!)).toHaveLength(32);
    for (const personal of [String(id), first.email]) {
      expect(new TextDecoder().decode(fromB64url(handle!))).not.toBe(personal);
      expect(handle).not.toBe(b64url(new TextEncoder().encode(personal)));
    }
    expect((await creationOptions(second.session.token)).user.id).not.toBe(handle);
    // Every challenge is new and stored for this account, for five minutes, as a registration's.
    const challenges = new Set(burst.map((options) => options.challenge));
    expect(challenges.size).toBe(10);
    const stored = await storedChallenge(burst[0]!.challenge);
    expect(stored).toEqual({ kind: "registration", user_id: id, expires_at: expect.any(Number) });
    expect(Math.abs(stored!.expires_at - (Date.now() + PASSKEY_CHALLENGE_TTL_MS))).toBeLessThan(30_000);
  });

  it("lists the account's passkeys in excludeCredentials, so an authenticator makes no second one", async () => {
    const { session } = await signedInAccount();
    const { passkey } = await registeredPasskey(session.token);
    const { body } = await jsonOf(await registrationOptions(session.token));
    expect(body).toMatchObject({
      options: { excludeCredentials: [{ id: passkey.id, type: "public-key", transports: ["internal", "hybrid"] }] },
    });
  });

  it("answers 401 for a missing password without counting it, and for a wrong one, counted on the session like the other step-ups", async () => {
    const { session } = await signedInAccount();
    for (const body of [{}, { password: "" }]) {
      expect(await textOf(await registrationOptions(session.token, body))).toEqual({
        status: 401,
        type: TEXT,
        body: AuthMessage.passwordRequired,
      });
    }
    for (let i = 0; i < 4; i++) {
      expect(await textOf(await registrationOptions(session.token, { password: "wrong password" }))).toEqual({
        status: 401,
        type: TEXT,
        body: AuthMessage.wrongPassword,
      });
    }
    // The fifth wrong password ends the session, as in every step-up.
    expect(await textOf(await registrationOptions(session.token, { password: "wrong password" }))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.wrongPassword,
    });
    await expectEnded(session);
  });

  it("answers 400 for a password that is not a string, and 401 without an access token", async () => {
    const { session } = await signedInAccount();
    expect(await textOf(await registrationOptions(session.token, { password: 12 }))).toEqual({
      status: 400,
      type: TEXT,
      body: AuthMessage.passwordString,
    });
    expect(await textOf(await call("POST", "/auth/passkeys/register/options", { password: PASSWORD }))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidAccessToken,
    });
  });

  it("with TOTP on, needs a current code too: 401 without it or with a wrong one", async () => {
    const { session } = await signedInAccount();
    const secret = await turnOnTotp(session.token);
    expect(await textOf(await registrationOptions(session.token))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.mfaCodeRequired,
    });
    expect(await textOf(await registrationOptions(session.token, { password: PASSWORD, code: "000000" }))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidMfaCode,
    });
    expect(
      (await registrationOptions(session.token, { password: PASSWORD, code: await totpCode(secret, 1) })).status,
    ).toBe(200);
  });

  it("answers 503 saying passkeys are not set up while WEBAUTHN_RP_ID is unset or unusable, before asking for the password", async () => {
    const { session } = await signedInAccount();
    for (const bindings of [
      { WEBAUTHN_RP_ID: "" },
      { WEBAUTHN_RP_ID: "https://example.com" },
      { WEBAUTHN_RP_ID: "example.com", WEBAUTHN_ORIGINS: "https://evil.test" },
    ]) {
      expect(await textOf(await registrationOptions(session.token, { password: "wrong" }, bindings))).toEqual({
        status: 503,
        type: TEXT,
        body: AuthMessage.passkeysUnavailable,
      });
    }
    // The rest of the API does not mind.
    expect((await call("GET", "/auth/passkeys", undefined, bearer(session.token))).status).toBe(200);
  });
});

describe("POST /auth/passkeys/register/verify", () => {
  it("adds the passkey: 201 with the passkey, the row stored, a notice mailed", async () => {
    const { email, session } = await signedInAccount();
    const passkey = await SoftwarePasskey.create();
    const response = await registerWith(session.token, passkey, { name: "  My phone " });
    const { status, type, body } = await jsonOf(response);
    expect({ status, type }).toEqual({ status: 201, type: JSON_TYPE });
    expect(body).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      name: "My phone",
      created_at: expect.stringMatching(ISO),
      last_used_at: null,
      backed_up: false,
      counter_regressed_at: null,
    });
    const answer = v.parse(PasskeyAnswer, body);
    expect(await storedPasskeys(email)).toEqual([
      {
        id: answer.id,
        user_id: (await storedUser(email))!.id,
        credential_id: passkey.id,
        public_key: b64url(await passkey.coseKey()),
        counter: 0,
        backed_up: 0,
        transports: "internal,hybrid",
        name: "My phone",
        created_at: Date.parse(answer.created_at),
        last_used_at: null,
        // The session that added it: the undo of an e-mail change removes what the changing session added.
        added_by_session: sessionIdOf(session.token),
        counter_regressed_at: null,
      },
    ]);
    const mails = await mailsWithSubject(email, ADDED);
    expect(mails.map((mail) => mail.text)).toEqual([
      'A passkey named "My phone" was added to your account. It signs in without your password.\n' +
        "If this was not you, remove it at once (your passkeys are listed in your account's security settings) and change your password.",
    ]);
  });

  it('names a passkey "Passkey" without a name, and records a synced one as backed up', async () => {
    const { session } = await signedInAccount();
    const response = await registerWith(session.token, await SoftwarePasskey.create({ flags: { be: true, bs: true } }));
    expect(await response.json()).toMatchObject({ name: "Passkey", backed_up: true });
  });

  it("refuses a bad name with 400 before the challenge is used", async () => {
    const { session } = await signedInAccount();
    const options = await creationOptions(session.token);
    const passkey = await SoftwarePasskey.create();
    for (const [name, message] of [
      ["   ", AuthMessage.passkeyNameRequired],
      [7, AuthMessage.passkeyNameString],
      ["x".repeat(65), AuthMessage.passkeyNameInvalid],
      ["a\u0000b", AuthMessage.passkeyNameInvalid],
    ] as const) {
      const response = await call(
        "POST",
        "/auth/passkeys/register/verify",
        { response: await passkey.register(options), name },
        bearer(session.token),
      );
      expect(await textOf(response)).toEqual({ status: 400, type: TEXT, body: message });
    }
    expect((await registerWith(session.token, passkey, { options })).status).toBe(201);
  });

  it("answers 400 plain text for a body without a credential, or one that is not WebAuthn JSON", async () => {
    const { session } = await signedInAccount();
    const verify = (body: unknown) => call("POST", "/auth/passkeys/register/verify", body, bearer(session.token));
    expect(await textOf(await verify({}))).toEqual({
      status: 400,
      type: TEXT,
      body: AuthMessage.passkeyResponseRequired,
    });
    const good = await (await SoftwarePasskey.create()).register(await creationOptions(session.token));
    for (const response of [
      "x",
      { ...good, type: "password" },
      { ...good, rawId: "not base64url!" },
      { ...good, response: { clientDataJSON: good.response.clientDataJSON } },
    ]) {
      expect(await textOf(await verify({ response }))).toEqual({
        status: 400,
        type: TEXT,
        body: AuthMessage.passkeyResponseInvalid,
      });
    }
  });

  const refused = (reason: string, error: string) => ({ status: 400, type: JSON_TYPE, body: { error, reason } });

  it("refuses another origin with 400 JSON, reason origin", async () => {
    const { email, session } = await signedInAccount();
    const response = await registerWith(session.token, await SoftwarePasskey.create(), {
      overrides: { origin: "https://evil.test" },
    });
    expect(await jsonOf(response)).toEqual(refused("origin", AuthMessage.passkeyOriginRefused));
    expect(await storedPasskeys(email)).toEqual([]);
  });

  it("refuses a credential made for another RP ID with 400 JSON, reason rp_id", async () => {
    const { session } = await signedInAccount();
    const response = await registerWith(session.token, await SoftwarePasskey.create(), {
      overrides: { rpId: "evil.test" },
    });
    expect(await jsonOf(response)).toEqual(refused("rp_id", AuthMessage.passkeyRpIdRefused));
  });

  it("refuses a credential made without user verification with 400 JSON, reason user_verification", async () => {
    const { session } = await signedInAccount();
    const response = await registerWith(session.token, await SoftwarePasskey.create(), {
      overrides: { flags: { uv: false } },
    });
    expect(await jsonOf(response)).toEqual(refused("user_verification", AuthMessage.passkeyUserNotVerified));
  });

  it("refuses a response that is not a registration (a webauthn.get client data) with 400 JSON, reason invalid_response", async () => {
    const { session } = await signedInAccount();
    const response = await registerWith(session.token, await SoftwarePasskey.create(), {
      overrides: { type: "webauthn.get" },
    });
    expect(await jsonOf(response)).toEqual(refused("invalid_response", AuthMessage.passkeyResponseRefused));
  });

  it("refuses a used challenge with 400 JSON, reason challenge: the challenge is used up even by a refused response", async () => {
    const { session } = await signedInAccount();
    const options = await creationOptions(session.token);
    expect(
      (
        await registerWith(session.token, await SoftwarePasskey.create(), {
          options,
          overrides: { origin: "https://evil.test" },
        })
      ).status,
    ).toBe(400);
    expect(await jsonOf(await registerWith(session.token, await SoftwarePasskey.create(), { options }))).toEqual(
      refused("challenge", AuthMessage.passkeyChallengeRefused),
    );
    const again = await creationOptions(session.token);
    expect((await registerWith(session.token, await SoftwarePasskey.create(), { options: again })).status).toBe(201);
    expect(await jsonOf(await registerWith(session.token, await SoftwarePasskey.create(), { options: again }))).toEqual(
      refused("challenge", AuthMessage.passkeyChallengeRefused),
    );
  });

  it("refuses a challenge issued to another account, and leaves it to that account", async () => {
    const mine = await signedInAccount();
    const theirs = await signedInAccount();
    const options = await creationOptions(theirs.session.token);
    expect(await jsonOf(await registerWith(mine.session.token, await SoftwarePasskey.create(), { options }))).toEqual(
      refused("challenge", AuthMessage.passkeyChallengeRefused),
    );
    expect((await registerWith(theirs.session.token, await SoftwarePasskey.create(), { options })).status).toBe(201);
  });

  it("refuses a sign-in challenge, and one past its five minutes", async () => {
    const { session } = await signedInAccount();
    const signInChallenge = (await requestOptions()).challenge;
    const options = await creationOptions(session.token);
    const fromSignIn = await registerWith(session.token, await SoftwarePasskey.create(), {
      options,
      overrides: { challenge: signInChallenge },
    });
    expect(await jsonOf(fromSignIn)).toEqual(refused("challenge", AuthMessage.passkeyChallengeRefused));
    await expireChallenge(options.challenge);
    expect(await jsonOf(await registerWith(session.token, await SoftwarePasskey.create(), { options }))).toEqual(
      refused("challenge", AuthMessage.passkeyChallengeRefused),
    );
  });

  it("uses one challenge once under a burst: of 10 concurrent verifies of one response, exactly one 201", async () => {
    const { email, session } = await signedInAccount();
    const passkey = await SoftwarePasskey.create();
    const response = await passkey.register(await creationOptions(session.token));
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        call("POST", "/auth/passkeys/register/verify", { response }, bearer(session.token)),
      ),
    );
    expect(tally(answers)).toEqual({ 201: 1, 400: 9 });
    expect(await storedPasskeys(email)).toHaveLength(1);
  });

  it("answers 409 for a credential already registered, to this account or another", async () => {
    const first = await signedInAccount();
    const second = await signedInAccount();
    const { passkey } = await registeredPasskey(first.session.token);
    for (const { session } of [first, second]) {
      expect(await textOf(await registerWith(session.token, passkey))).toEqual({
        status: 409,
        type: TEXT,
        body: AuthMessage.passkeyAlreadyRegistered,
      });
    }
    expect(await count("SELECT count(*) AS n FROM passkeys WHERE credential_id = ?", passkey.id)).toBe(1);
  });

  it("keeps an account to 10 passkeys: the 11th is a 409, and one removed makes room", async () => {
    const { email, session } = await signedInAccount();
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push((await registeredPasskey(session.token)).id);
    expect(await textOf(await registerWith(session.token, await SoftwarePasskey.create()))).toEqual({
      status: 409,
      type: TEXT,
      body: AuthMessage.passkeyLimit,
    });
    expect(
      await call("DELETE", `/auth/passkeys/${ids[0]}`, { password: PASSWORD }, bearer(session.token)),
    ).toHaveProperty("status", 204);
    expect((await registerWith(session.token, await SoftwarePasskey.create())).status).toBe(201);
    expect(await storedPasskeys(email)).toHaveLength(10);
  });

  it("answers 401 once the session has ended", async () => {
    const { session } = await signedInAccount();
    const options = await creationOptions(session.token);
    expect((await call("POST", "/auth/logout", undefined, bearer(session.token))).status).toBe(204);
    const response = await (await SoftwarePasskey.create()).register(options);
    expect(
      await textOf(await call("POST", "/auth/passkeys/register/verify", { response }, bearer(session.token))),
    ).toEqual({ status: 401, type: TEXT, body: AuthMessage.invalidAccessToken });
  });

  it("answers 503 while passkeys are not set up, leaving the challenge alone", async () => {
    const { session } = await signedInAccount();
    const options = await creationOptions(session.token);
    const response = await (await SoftwarePasskey.create()).register(options);
    const unset = await callWithEnv(
      { WEBAUTHN_RP_ID: " " },
      "POST",
      "/auth/passkeys/register/verify",
      { response },
      bearer(session.token),
    );
    expect(await textOf(unset)).toEqual({ status: 503, type: TEXT, body: AuthMessage.passkeysUnavailable });
    expect(await storedChallenge(options.challenge)).not.toBeNull();
  });
});
