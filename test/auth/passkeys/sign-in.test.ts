import { env } from "cloudflare:workers";
import * as v from "valibot";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { bearer, lockLogin, postLogin, loginFailuresRow, sessionIdOf, storedSession } from "../../support/accounts";
import { call, callWithEnv, captureLogs, JSON_TYPE, jsonOf, tally, TEXT, textOf } from "../../support/app";
import { SoftwarePasskey } from "./authenticator";
import { mailsWithSubject } from "../../support/mail";
import {
  creationOptions,
  expireChallenge,
  INVALID_PASSKEY,
  LoginAnswer,
  registeredPasskey,
  requestOptions,
  signedInAccount,
  signIn,
  storedChallenge,
  storedPasskeys,
  turnOnTotp,
  verifySignIn,
} from "./support";
import { PASSKEY_CHALLENGE_TTL_MS } from "../../../src/auth/policy";

/**
 * Signing in with a passkey (src/auth/passkeys/sign-in.ts): every refusal of the list answers the
 * same 401, each tested on its own; the challenge is claimed before the signature is looked at.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

/** An account with one passkey registered: its address, password session and the passkey. */
async function accountWithPasskey(create: Parameters<typeof SoftwarePasskey.create>[0] = {}) {
  const { email, session } = await signedInAccount();
  const { passkey, id } = await registeredPasskey(session.token, create);
  return { email, session, passkey, id };
}

async function amrOf(token: string): Promise<string[]> {
  const sessions = (await (await call("GET", "/auth/sessions", undefined, bearer(token))).json()) as {
    amr: string[];
    current: boolean;
  }[];
  return sessions.find((session) => session.current)!.amr;
}

describe("POST /auth/passkeys/login/options", () => {
  it("answers request options without allowCredentials, to anyone, and stores a sign-in challenge that belongs to nobody for five minutes", async () => {
    const response = await call("POST", "/auth/passkeys/login/options", {});
    const { status, type, body } = await jsonOf(response);
    expect({ status, type }).toEqual({ status: 200, type: JSON_TYPE });
    expect(body).toEqual({
      options: {
        rpId: "localhost",
        challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        timeout: PASSKEY_CHALLENGE_TTL_MS,
        userVerification: "required",
      },
    });
    const { challenge } = (body as { options: { challenge: string } }).options;
    const stored = await storedChallenge(challenge);
    expect(stored).toMatchObject({ kind: "authentication", user_id: null });
    expect(Math.abs(stored!.expires_at - (Date.now() + PASSKEY_CHALLENGE_TTL_MS))).toBeLessThan(30_000);
  });

  it("takes an empty JSON object; anything but an object is a 400, and passkeys not set up a 503", async () => {
    expect(await textOf(await call("POST", "/auth/passkeys/login/options", "[]"))).toEqual({
      status: 400,
      type: TEXT,
      body: "Request body must be a JSON object.",
    });
    expect(await textOf(await callWithEnv({ WEBAUTHN_RP_ID: "" }, "POST", "/auth/passkeys/login/options", {}))).toEqual(
      { status: 503, type: TEXT, body: AuthMessage.passkeysUnavailable },
    );
  });
});

describe("POST /auth/passkeys/login/verify", () => {
  it("signs in exactly like a login; the session records a device-bound passkey as hwk and mfa, and the passkey its use", async () => {
    const { email, passkey, id } = await accountWithPasskey();
    const response = await signIn(passkey);
    const { status, type, body } = await jsonOf(response);
    expect({ status, type }).toEqual({ status: 200, type: JSON_TYPE });
    expect(Object.keys(body as object)).toEqual(["token", "refresh_token", "expires_in", "device_token"]);
    const tokens = v.parse(LoginAnswer, body);
    expect(await amrOf(tokens.token)).toEqual(["hwk", "mfa"]);
    expect((await call("GET", "/auth/me", undefined, bearer(tokens.token))).status).toBe(200);
    const [stored] = await storedPasskeys(email);
    expect(stored).toMatchObject({ id, counter: 1, last_used_at: expect.any(Number) });
    expect((await storedSession(sessionIdOf(tokens.token)))?.user_id).toBe(stored!.user_id);
  });

  it("records a synced passkey (backup eligible and backed up) as swk and mfa", async () => {
    const { passkey } = await accountWithPasskey({ counting: false, flags: { be: true, bs: true } });
    const tokens = v.parse(LoginAnswer, await (await signIn(passkey)).json());
    expect(await amrOf(tokens.token)).toEqual(["swk", "mfa"]);
  });

  it("asks no TOTP code of an account with TOTP on: user verification makes the passkey two factors", async () => {
    const { session, passkey } = await accountWithPasskey();
    await turnOnTotp(session.token);
    const response = await signIn(passkey);
    expect(response.status).toBe(200);
    expect(await response.json()).not.toHaveProperty("mfa_required");
  });

  it("renews the device token of the device it came from", async () => {
    const { email, passkey } = await accountWithPasskey();
    const first = v.parse(LoginAnswer, await (await postLogin(email)).json());
    const response = await verifySignIn(await passkey.assert(await requestOptions()), undefined, {
      device_token: first.device_token,
    });
    const renewed = v.parse(LoginAnswer, await response.json());
    expect(renewed.device_token.split(".")[0]).toBe(first.device_token.split(".")[0]);
    // Anything else counts for nothing: a new device.
    const other = v.parse(
      LoginAnswer,
      await (await verifySignIn(await passkey.assert(await requestOptions()), undefined, { device_token: 42 })).json(),
    );
    expect(other.device_token.split(".")[0]).not.toBe(first.device_token.split(".")[0]);
  });

  it("refuses an unknown credential with 401 Invalid passkey.", async () => {
    const stranger = await SoftwarePasskey.create();
    expect(await textOf(await signIn(stranger))).toEqual(INVALID_PASSKEY);
  });

  it("refuses a used challenge: an assertion signs in once", async () => {
    const { passkey } = await accountWithPasskey({ counting: false });
    const assertion = await passkey.assert(await requestOptions());
    expect((await verifySignIn(assertion)).status).toBe(200);
    expect(await textOf(await verifySignIn(assertion))).toEqual(INVALID_PASSKEY);
  });

  it("refuses an expired challenge", async () => {
    const { passkey } = await accountWithPasskey();
    const options = await requestOptions();
    await expireChallenge(options.challenge);
    expect(await textOf(await verifySignIn(await passkey.assert(options)))).toEqual(INVALID_PASSKEY);
  });

  it("refuses a registration challenge, and an unknown one", async () => {
    const { session, passkey } = await accountWithPasskey();
    const registration = await creationOptions(session.token);
    const options = await requestOptions();
    expect(
      await textOf(await verifySignIn(await passkey.assert(options, { challenge: registration.challenge }))),
    ).toEqual(INVALID_PASSKEY);
    expect(await storedChallenge(registration.challenge)).not.toBeNull();
    expect(await textOf(await verifySignIn(await passkey.assert(options, { challenge: "A".repeat(43) })))).toEqual(
      INVALID_PASSKEY,
    );
  });

  it("refuses another origin, and uses the challenge up doing so", async () => {
    const { passkey } = await accountWithPasskey({ counting: false });
    const options = await requestOptions();
    expect(await textOf(await verifySignIn(await passkey.assert(options, { origin: "https://evil.test" })))).toEqual(
      INVALID_PASSKEY,
    );
    expect(await textOf(await verifySignIn(await passkey.assert(options)))).toEqual(INVALID_PASSKEY);
  });

  it("refuses an assertion for another RP ID", async () => {
    const { passkey } = await accountWithPasskey();
    expect(await textOf(await signIn(passkey, { rpId: "evil.test" }))).toEqual(INVALID_PASSKEY);
  });

  it("refuses an assertion without user verification", async () => {
    const { passkey } = await accountWithPasskey();
    expect(await textOf(await signIn(passkey, { flags: { uv: false } }))).toEqual(INVALID_PASSKEY);
  });

  it("refuses a bad signature: the credential's id with another key", async () => {
    const { passkey } = await accountWithPasskey();
    const impostor = await SoftwarePasskey.create({ credentialId: passkey.credentialId });
    impostor.userHandle = passkey.userHandle;
    impostor.counter = 10;
    expect(await textOf(await signIn(impostor))).toEqual(INVALID_PASSKEY);
    expect((await signIn(passkey)).status).toBe(200);
  });

  it("refuses a counter that does not move forward: the same, a lower one, or 0 once it has counted", async () => {
    const { email, passkey } = await accountWithPasskey();
    expect((await signIn(passkey, { counter: 5 })).status).toBe(200);
    for (const counter of [5, 4, 0]) {
      expect(await textOf(await signIn(passkey, { counter }))).toEqual(INVALID_PASSKEY);
    }
    expect((await signIn(passkey, { counter: 6 })).status).toBe(200);
    expect((await storedPasskeys(email))[0]).toMatchObject({ counter: 6 });
  });

  it("marks a passkey whose counter went backwards under a good signature in the list, and mails its owner (I5)", async () => {
    const { email, session, passkey, id } = await accountWithPasskey();
    expect((await signIn(passkey, { counter: 5 })).status).toBe(200);
    const listed = async () =>
      (await (await call("GET", "/auth/passkeys", undefined, bearer(session.token))).json()) as Array<
        Record<string, unknown>
      >;
    expect(await listed()).toEqual([expect.objectContaining({ id, counter_regressed_at: null })]);

    const before = Date.now();
    expect(await textOf(await signIn(passkey, { counter: 3 }))).toEqual(INVALID_PASSKEY);
    const [marked] = await listed();
    expect(marked).toMatchObject({ id, counter_regressed_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expect(Date.parse(String(marked!.counter_regressed_at))).toBeGreaterThanOrEqual(before);
    expect(
      (await mailsWithSubject(email, "A Passkey of Your Account May Have Been Copied")).map((mail) => mail.text),
    ).toEqual([
      'Someone tried to sign in with your passkey named "Passkey", and the passkey\'s signature counter went backwards, as a copy of it would make it.\n' +
        "That sign-in was refused, and the passkey is marked in your list of passkeys.\n" +
        "If you did not just sign in with it, remove it (your passkeys are listed in your account's security settings) and change your password.",
    ]);
    // Refusals for anything else (another origin) mark nothing.
    const other = await accountWithPasskey();
    expect(await textOf(await signIn(other.passkey, { origin: "https://evil.test" }))).toEqual(INVALID_PASSKEY);
    expect((await storedPasskeys(other.email))[0]).toMatchObject({ counter_regressed_at: null });
  });

  it("keeps a passkey whose counter stays 0 working, as synced passkeys send it", async () => {
    const { email, passkey } = await accountWithPasskey({ counting: false });
    for (let i = 0; i < 3; i++) expect((await signIn(passkey)).status).toBe(200);
    expect((await storedPasskeys(email))[0]).toMatchObject({ counter: 0 });
  });

  it("takes any counter above the stored one as forward, however far", async () => {
    const { passkey } = await accountWithPasskey();
    expect((await signIn(passkey, { counter: 1_000_000 })).status).toBe(200);
  });

  it("refuses a userHandle of another account, and accepts an assertion that sends none", async () => {
    const { passkey } = await accountWithPasskey({ counting: false });
    const other = await accountWithPasskey();
    expect(await textOf(await signIn(passkey, { userHandle: other.passkey.userHandle }))).toEqual(INVALID_PASSKEY);
    expect((await signIn(passkey, { userHandle: null })).status).toBe(200);
  });

  it("claims the challenge before the signature: of 10 concurrent verifies of one assertion, exactly one 200", async () => {
    const { email, passkey } = await accountWithPasskey({ counting: false });
    const assertion = await passkey.assert(await requestOptions());
    const answers = await Promise.all(Array.from({ length: 10 }, () => verifySignIn(assertion)));
    expect(tally(answers)).toEqual({ 200: 1, 401: 9 });
    const userId = (await storedPasskeys(email))[0]!.user_id;
    const sessions = await env.DB.prepare("SELECT amr FROM sessions WHERE user_id = ? AND amr != 'pwd'")
      .bind(userId)
      .all();
    expect(sessions.results).toHaveLength(1);
  });

  it("lets one of two assertions with the same non-zero counter through when they race on the counter", async () => {
    const { passkey } = await accountWithPasskey();
    const [a, b] = [await requestOptions(), await requestOptions()];
    const answers = await Promise.all([
      verifySignIn(await passkey.assert(a, { counter: 7 })),
      verifySignIn(await passkey.assert(b, { counter: 7 })),
    ]);
    expect(tally(answers)).toEqual({ 200: 1, 401: 1 });
  });

  it("answers 400 for a body without an assertion or with a malformed one, and logs why each 401 was given", async () => {
    expect(await textOf(await call("POST", "/auth/passkeys/login/verify", {}))).toEqual({
      status: 400,
      type: TEXT,
      body: AuthMessage.passkeyResponseRequired,
    });
    expect(await textOf(await verifySignIn({ id: "x", rawId: "x", type: "public-key", response: {} }))).toEqual({
      status: 400,
      type: TEXT,
      body: AuthMessage.passkeyResponseInvalid,
    });
    const logs = captureLogs();
    expect(await textOf(await signIn(await SoftwarePasskey.create()))).toEqual(INVALID_PASSKEY);
    expect(logs).toContainEqual(
      expect.objectContaining({ event: "passkey_sign_in_refused", why: "unknown credential" }),
    );
  });
});

describe("the password lock and passkeys", () => {
  it("leaves a passkey signing in while wrong passwords have locked the address, and does not touch the lock", async () => {
    const { email, passkey } = await accountWithPasskey();
    await lockLogin(email);
    const lock = await loginFailuresRow(email);
    expect(await textOf(await postLogin(email))).toEqual({ status: 429, type: TEXT, body: AuthMessage.loginLocked });
    expect((await signIn(passkey)).status).toBe(200);
    expect(await loginFailuresRow(email)).toEqual(lock);
    expect((await postLogin(email)).status).toBe(429);
  });

  it("keeps the per-client limit on both passkey endpoints: past 30 POSTs to /auth in a minute, 429", async () => {
    const limited = { RATE_LIMITS: "on" };
    const client = { "CF-Connecting-IP": `203.0.113.${Math.floor(Math.random() * 250)}-${crypto.randomUUID()}` };
    for (let i = 0; i < 15; i++) {
      expect((await callWithEnv(limited, "POST", "/auth/passkeys/login/options", {}, client)).status).toBe(200);
      expect((await callWithEnv(limited, "POST", "/auth/passkeys/login/verify", {}, client)).status).toBe(400);
    }
    for (const path of ["/auth/passkeys/login/options", "/auth/passkeys/login/verify"]) {
      const over = await callWithEnv(limited, "POST", path, {}, client);
      expect(await textOf(over)).toEqual({ status: 429, type: TEXT, body: AuthMessage.clientThrottled });
      expect(over.headers.get("retry-after")).toBe("60");
    }
  });
});
