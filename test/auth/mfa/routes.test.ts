import { env } from "cloudflare:workers";
import * as v from "valibot";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { open } from "../../../src/lib/secret-box";
import { base32Decode, base32Encode, stepAt, totpAt } from "../../../src/lib/totp";
import { Contract } from "../../contract";
import {
  account,
  bearer,
  expectEnded,
  postLogin,
  me,
  NEW_PASSWORD,
  pastCooldown,
  refresh,
  reset,
  resetCode,
  sessionIdOf,
  storedUser,
  type Tokens,
} from "../../support/accounts";
import { call, callWithEnv, captureLogs, count, jsonOf, PASSWORD, tally, TEXT, textOf } from "../../support/app";
import { mailsWithSubject } from "../../support/mail";

/**
 * Two-factor authentication with TOTP (src/auth/mfa/, and the gate and step-up in src/auth/session/). Codes are
 * computed from the secret the API answered, with our own RFC 6238 implementation (test/lib/totp.test.ts
 * checks it against the RFC's vectors). A code is accepted once per time step per account, and a step of
 * ±1 is accepted: each test uses the current step and the next one, so crossing a step boundary mid-test
 * never makes a code stale.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

const Enrolment = v.object({ secret: v.pipe(v.string(), v.regex(/^[A-Z2-7]{32}$/)), otpauth_uri: v.string() });
const RecoveryCodes = v.object({
  recovery_codes: v.pipe(
    v.array(v.pipe(v.string(), v.regex(/^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){3}$/))),
    v.length(10),
  ),
});
const Challenge = v.strictObject({ mfa_required: v.literal(true), mfa_token: v.string(), expires_in: v.literal(300) });
const LoginTokens = v.object({
  token: v.string(),
  refresh_token: v.string(),
  expires_in: v.literal(3600),
  device_token: v.string(),
});

/** The code of the authenticator app `offset` steps from now. */
const codeAt = (secret: Uint8Array, offset = 0) => totpAt(secret, stepAt(Date.now()) + offset);

async function enrol(token: string, password = PASSWORD) {
  return call("POST", "/auth/mfa/totp", { password }, bearer(token));
}

/**
 * An account with two-factor authentication on (confirmed with the current step): its secret, recovery codes and
 * session.
 */
async function withFactor() {
  const email = await account();
  const session = await logIn2(email);
  // Past the registration mail's cooldown, so that the account may ask for an e-mail change at once.
  await pastCooldown(email);
  const { secret } = v.parse(Enrolment, await (await enrol(session.token)).json());
  const key = base32Decode(secret);
  const confirmed = await call("POST", "/auth/mfa/totp/confirm", { code: await codeAt(key) }, bearer(session.token));
  expect(confirmed.status).toBe(200);
  const { recovery_codes: recoveryCodes } = v.parse(RecoveryCodes, await confirmed.json());
  return { email, key, recoveryCodes, session };
}

/** Logs in an account without a second factor. */
async function logIn2(email: string): Promise<Tokens> {
  return v.parse(LoginTokens, await (await postLogin(email)).json());
}

/** The first step of a login with a factor: its mfa_token. */
async function challenge(email: string): Promise<string> {
  const response = await postLogin(email);
  expect(response.status).toBe(200);
  return v.parse(Challenge, await response.json()).mfa_token;
}

const verify = (mfaToken: string, proof: { code: string } | { recovery_code: string }) =>
  call("POST", "/auth/mfa/verify", { mfa_token: mfaToken, ...proof });
const sessionsOf = async (email: string) =>
  count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", (await storedUser(email))!.id);

describe("enrolment (POST /auth/mfa/totp, /auth/mfa/totp/confirm)", () => {
  it("answers a 160-bit base32 secret and the otpauth URI, and turns the factor on with a code of it", async () => {
    const email = await account();
    const { token } = await logIn2(email);
    const enrolled = await enrol(token);
    expect(enrolled.headers.get("cache-control")).toBe("no-store");
    const { secret, otpauth_uri: uri } = v.parse(Enrolment, await enrolled.json());
    expect(base32Decode(secret)).toHaveLength(20);
    expect(uri).toBe(
      `otpauth://totp/Notes%20API:${encodeURIComponent(email)}?secret=${secret}&issuer=Notes+API&algorithm=SHA1&digits=6&period=30`,
    );
    // Pending: /auth/me says off, and a login needs no second factor yet.
    expect(v.parse(v.object({ mfa: v.object({ totp: v.boolean() }) }), await (await me(token)).json()).mfa.totp).toBe(
      false,
    );

    expect(
      await textOf(
        await call(
          "POST",
          "/auth/mfa/totp/confirm",
          { code: "000000" === (await codeAt(base32Decode(secret))) ? "111111" : "000000" },
          bearer(token),
        ),
      ),
    ).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidMfaCode,
    });
    const confirmed = await call(
      "POST",
      "/auth/mfa/totp/confirm",
      { code: await codeAt(base32Decode(secret)) },
      bearer(token),
    );
    expect(confirmed.status).toBe(200);
    const { recovery_codes: codes } = v.parse(RecoveryCodes, await confirmed.json());
    expect(new Set(codes).size).toBe(10);
    expect(await jsonOf(await me(token))).toMatchObject({
      body: { mfa: { totp: true, recovery_codes_remaining: 10 } },
    });
    expect(await mailsWithSubject(email, "Two-Factor Authentication Turned On")).toHaveLength(1);
  });

  it("replaces a pending enrolment, refuses one while a factor is on (409), and checks the password", async () => {
    const email = await account();
    const { token } = await logIn2(email);
    const first = v.parse(Enrolment, await (await enrol(token)).json());
    const second = v.parse(Enrolment, await (await enrol(token)).json());
    expect(second.secret).not.toBe(first.secret);
    // Only the newest secret confirms.
    expect(
      (await call("POST", "/auth/mfa/totp/confirm", { code: await codeAt(base32Decode(first.secret)) }, bearer(token)))
        .status,
    ).toBe(401);
    expect(
      (await call("POST", "/auth/mfa/totp/confirm", { code: await codeAt(base32Decode(second.secret)) }, bearer(token)))
        .status,
    ).toBe(200);
    expect(await textOf(await enrol(token))).toEqual({ status: 409, type: TEXT, body: AuthMessage.mfaAlreadyActive });
    expect(await textOf(await enrol(token, "wrong password"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.wrongPassword,
    });
  });

  it("never accepts the confirming code again, and says why", async () => {
    const email = await account();
    const { token } = await logIn2(email);
    const key = base32Decode(v.parse(Enrolment, await (await enrol(token)).json()).secret);
    const code = await codeAt(key);
    expect((await call("POST", "/auth/mfa/totp/confirm", { code }, bearer(token))).status).toBe(200);
    expect(await textOf(await verify(await challenge(email), { code }))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.mfaCodeReused,
    });
    expect(AuthMessage.mfaCodeReused).toBe(
      "This authentication code was already used. Wait for the next one in your authenticator app.",
    );
  });

  it("keeps the secret sealed at rest and the recovery codes hashed, and logs none of them", async () => {
    const logs = captureLogs();
    const { email, key, recoveryCodes } = await withFactor();
    const userId = (await storedUser(email))!.id;
    const row = await env.DB.prepare("SELECT sealed_secret FROM mfa_factors WHERE user_id = ?")
      .bind(userId)
      .first<{ sealed_secret: string }>();
    expect(row!.sealed_secret).toMatch(/^v1\.[0-9a-f]{12}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(row!.sealed_secret).not.toContain(base32Encode(key));
    const stored = await env.DB.prepare("SELECT code_hash FROM mfa_recovery_codes WHERE user_id = ?")
      .bind(userId)
      .all<{ code_hash: string }>();
    expect(stored.results.map((r) => r.code_hash).every((hash) => /^[0-9a-f]{64}$/.test(hash))).toBe(true);
    const mfaToken = await challenge(email);
    const code = await codeAt(key, 1);
    expect((await verify(mfaToken, { code })).status).toBe(200);
    const written = JSON.stringify(logs);
    for (const secret of [base32Encode(key), mfaToken, code, ...recoveryCodes]) expect(written).not.toContain(secret);
  });

  it("opens secrets sealed under the previous key while MFA_ENCRYPTION_KEY is rotated", async () => {
    const { email, key } = await withFactor();
    const rotated = {
      MFA_ENCRYPTION_KEY: "a brand new encryption secret, 32+ bytes",
      MFA_ENCRYPTION_KEY_PREVIOUS: env.JWT_SECRET_KEY,
    };
    const sealedBefore = await env.DB.prepare(
      "SELECT sealed_secret FROM mfa_factors WHERE user_id = (SELECT id FROM users WHERE email = ?)",
    )
      .bind(email)
      .first<string>("sealed_secret");
    const first = await callWithEnv(rotated, "POST", "/auth/login", { email, password: PASSWORD });
    const { mfa_token: mfaToken } = v.parse(Challenge, await first.json());
    expect(
      (await callWithEnv(rotated, "POST", "/auth/mfa/verify", { mfa_token: mfaToken, code: await codeAt(key, 1) }))
        .status,
    ).toBe(200);
    // The accepted code sealed the secret again under the new key: the previous one is no longer needed.
    const resealed = await env.DB.prepare(
      "SELECT sealed_secret FROM mfa_factors WHERE user_id = (SELECT id FROM users WHERE email = ?)",
    )
      .bind(email)
      .first<string>("sealed_secret");
    expect(await open(resealed!, [rotated.MFA_ENCRYPTION_KEY])).toEqual(key);
    expect(await open(sealedBefore!, [rotated.MFA_ENCRYPTION_KEY])).toBeUndefined();
    expect(resealed).not.toBe(sealedBefore);
  });
});

describe("login with a second factor", () => {
  it("answers a challenge and no token for the right password, and creates no session until the code", async () => {
    const { email, key, session } = await withFactor();
    const before = await sessionsOf(email);
    const response = await postLogin(email);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const mfaToken = v.parse(Challenge, await response.json()).mfa_token;
    expect(await sessionsOf(email)).toBe(before);

    const verified = await verify(mfaToken, { code: await codeAt(key, 1) });
    expect(verified.headers.get("cache-control")).toBe("no-store");
    const tokens = v.parse(LoginTokens, await verified.json());
    expect((await me(tokens.token)).status).toBe(200);
    expect(await sessionsOf(email)).toBe(before + 1);
    // A refresh continues a session that passed the gate: no second factor asked.
    expect((await refresh(session.refresh_token)).status).toBe(200);
    // The token died with its first success.
    expect(await textOf(await verify(mfaToken, { code: await codeAt(key, 1) }))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidMfaToken,
    });
  });

  it("keeps every other answer of the spec: a wrong password 401, an unknown address 401", async () => {
    const { email } = await withFactor();
    expect(await textOf(await postLogin(email, "wrong password"))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
  });

  it("gives an mfa_token 5 tries, even under a burst of 20 wrong codes, and none after 5 minutes", async () => {
    const { email, key } = await withFactor();
    const mfaToken = await challenge(email);
    const right = await codeAt(key, 1);
    const wrong = right === "000000" ? "111111" : "000000";
    const responses = await Promise.all(Array.from({ length: 20 }, () => verify(mfaToken, { code: wrong })));
    const bodies = await Promise.all(responses.map((response) => response.text()));
    expect(bodies.filter((body) => body === AuthMessage.invalidMfaCode)).toHaveLength(5);
    expect(bodies.filter((body) => body === AuthMessage.invalidMfaToken)).toHaveLength(15);
    expect((await verify(mfaToken, { code: right })).status).toBe(401);

    const expired = await challenge(email);
    await env.DB.prepare(
      "UPDATE mfa_challenges SET expires_at = ? WHERE user_id = (SELECT id FROM users WHERE email = ?)",
    )
      .bind(Date.now() - 1, email)
      .run();
    expect(await textOf(await verify(expired, { code: right }))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidMfaToken,
    });
  });

  it("opens exactly one session for 5 concurrent right verifies of one mfa_token", async () => {
    const { email, key } = await withFactor();
    const mfaToken = await challenge(email);
    const code = await codeAt(key, 1);
    const before = await sessionsOf(email);
    const responses = await Promise.all(Array.from({ length: 5 }, () => verify(mfaToken, { code })));
    expect(tally(responses)).toEqual({ 200: 1, 401: 4 });
    expect(await sessionsOf(email)).toBe(before + 1);
  });

  it("accepts a code (its time step) once per account, ever: 10 concurrent verifies with one code on 10 mfa_tokens give one session", async () => {
    const { email, key } = await withFactor();
    const tokens: string[] = [];
    for (let i = 0; i < 10; i++) tokens.push(await challenge(email));
    const code = await codeAt(key, 1);
    const before = await sessionsOf(email);
    const responses = await Promise.all(tokens.map((mfaToken) => verify(mfaToken, { code })));
    expect(tally(responses)).toEqual({ 200: 1, 401: 9 });
    expect(await sessionsOf(email)).toBe(before + 1);
  });

  it("counts second-factor failures toward the address's login lock", async () => {
    const { email, key } = await withFactor();
    const mfaToken = await challenge(email);
    const right = await codeAt(key, 1);
    const wrong = right === "999999" ? "888888" : "999999";
    // Eight failed attempts on the address (a right password ends its own run, so they come after it).
    await env.DB.prepare("INSERT INTO login_failures (email, failures, lockedUntil, lastAttemptAt) VALUES (?, 8, 0, ?)")
      .bind(email, Date.now())
      .run();
    expect((await verify(mfaToken, { code: wrong })).status).toBe(401);
    expect((await verify(mfaToken, { code: wrong })).status).toBe(401);
    expect(await textOf(await verify(mfaToken, { code: right }))).toEqual({
      status: 429,
      type: TEXT,
      body: AuthMessage.loginLocked,
    });
    expect(await textOf(await postLogin(email))).toEqual({ status: 429, type: TEXT, body: AuthMessage.loginLocked });
  });

  it("still asks for the second factor after a password reset (the reset is no bypass)", async () => {
    const { email } = await withFactor();
    expect((await reset(email, await resetCode(email))).status).toBe(200);
    const response = await postLogin(email, NEW_PASSWORD);
    expect(v.parse(Challenge, await response.json()).mfa_required).toBe(true);
  });

  it("opens no session for a challenge whose password was reset meanwhile: the reset moves the sign-in epoch on", async () => {
    const { email, key } = await withFactor();
    const mfaToken = await challenge(email);
    expect((await reset(email, await resetCode(email))).status).toBe(200);
    const before = await sessionsOf(email);
    expect(await textOf(await verify(mfaToken, { code: await codeAt(key, 1) }))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
    expect(await sessionsOf(email)).toBe(before);
  });
});

describe("wrong codes capped per account (F2)", () => {
  const GUESSING = "Someone Is Trying Codes on Your Account";
  const capped = { status: 429, type: TEXT, body: AuthMessage.mfaCodesCapped };

  /** A code that is neither of the current steps' (so it is wrong whatever the clock does mid-test). */
  async function wrongCode(key: Uint8Array): Promise<string> {
    const near = await Promise.all([-1, 0, 1, 2].map((offset) => codeAt(key, offset)));
    for (let n = 0; ; n++) {
      const code = String(100000 + n);
      if (!near.includes(code)) return code;
    }
  }

  it("refuses the right code after 10 wrong ones in the hour, however many right-password logins came between; recovery codes still work; one mail", async () => {
    const { email, key, recoveryCodes } = await withFactor();
    const wrong = await wrongCode(key);
    // The attack: the right password (which ends the address's run of attempts) and 5 guesses, twice.
    for (let round = 0; round < 2; round++) {
      const mfaToken = await challenge(email);
      for (let i = 0; i < 5; i++)
        expect(await textOf(await verify(mfaToken, { code: wrong }))).toEqual({
          status: 401,
          type: TEXT,
          body: AuthMessage.invalidMfaCode,
        });
    }
    const refused = await verify(await challenge(email), { code: await codeAt(key, 1) });
    expect(refused.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/);
    expect(await textOf(refused)).toEqual(capped);
    expect((await verify(await challenge(email), { recovery_code: recoveryCodes[0]! })).status).toBe(200);
    const notices = await mailsWithSubject(email, GUESSING);
    expect(notices).toHaveLength(1);
    expect(notices[0]!.text).toContain("10 wrong two-factor authentication codes");
  });

  it("checks at most 10 codes of 40 wrong ones sent together from 8 devices, refuses the right one next, and mails once", async () => {
    const email = await account();
    // Eight devices that signed in before the factor was on: each second step is judged on its own device's run.
    const devices: string[] = [];
    for (let i = 0; i < 8; i++) devices.push(v.parse(LoginTokens, await (await postLogin(email)).json()).device_token);
    const session = await logIn2(email);
    const key = base32Decode(v.parse(Enrolment, await (await enrol(session.token)).json()).secret);
    expect(
      (await call("POST", "/auth/mfa/totp/confirm", { code: await codeAt(key) }, bearer(session.token))).status,
    ).toBe(200);
    const tokens = await Promise.all(
      devices.map(
        async (device) =>
          v.parse(
            Challenge,
            await (await call("POST", "/auth/login", { email, password: PASSWORD, device_token: device })).json(),
          ).mfa_token,
      ),
    );
    const wrong = await wrongCode(key);
    const answers = await Promise.all(
      tokens.flatMap((mfaToken) => Array.from({ length: 5 }, () => verify(mfaToken, { code: wrong }))),
    );
    expect(tally(answers)).toEqual({ 401: 10, 429: 30 });
    // Each device's run is locked now; the address's is not, and the right code is refused all the same.
    expect(await textOf(await verify(await challenge(email), { code: await codeAt(key, 1) }))).toEqual(capped);
    expect(await mailsWithSubject(email, GUESSING)).toHaveLength(1);
  });

  it("counts the step-up's wrong codes too: a capped account's step-up answers 429 and keeps the session", async () => {
    const { email, key, session } = await withFactor();
    const wrong = await wrongCode(key);
    await env.DB.prepare(
      "UPDATE mfa_factors SET wrong_window_start = ?, wrong_in_window = 10 WHERE user_id = (SELECT id FROM users WHERE email = ?)",
    )
      .bind(Date.now(), email)
      .run();
    const body = { current_password: PASSWORD, new_password: NEW_PASSWORD, code: await codeAt(key, 1) };
    expect(await textOf(await call("POST", "/auth/change-password", body, bearer(session.token)))).toEqual(capped);
    expect(
      await textOf(await call("POST", "/auth/change-password", { ...body, code: wrong }, bearer(session.token))),
    ).toEqual(capped);
    expect((await me(session.token)).status).toBe(200);
  });
});

describe("turning the factor on (F12)", () => {
  it("ends every other session of the account, keeps the caller's, and says so in the notice", async () => {
    const email = await account();
    const other = await logIn2(email);
    const { key, session } = await (async () => {
      const mine = await logIn2(email);
      const secret = base32Decode(v.parse(Enrolment, await (await enrol(mine.token)).json()).secret);
      expect(
        (await call("POST", "/auth/mfa/totp/confirm", { code: await codeAt(secret) }, bearer(mine.token))).status,
      ).toBe(200);
      return { key: secret, session: mine };
    })();
    await expectEnded(other);
    expect((await me(session.token)).status).toBe(200);
    expect(key).toHaveLength(20);
    const [notice] = await mailsWithSubject(email, "Two-Factor Authentication Turned On");
    expect(notice?.text).toContain("every other session was signed out");
  });
});

describe("how a session was opened (amr)", () => {
  /** The `amr` of the session of `token`, as GET /auth/sessions shows it and as D1 holds it. */
  async function amrOf(token: string) {
    const list = (await (await call("GET", "/auth/sessions", undefined, bearer(token))).json()) as Array<{
      current: boolean;
      amr: string[];
    }>;
    const stored = await env.DB.prepare("SELECT amr FROM sessions WHERE id = ?")
      .bind(sessionIdOf(token))
      .first<string>("amr");
    return { shown: list.find((session) => session.current)?.amr, stored };
  }

  it("records a password login as pwd", async () => {
    const { token } = await logIn2(await account());
    expect(await amrOf(token)).toEqual({ shown: ["pwd"], stored: "pwd" });
  });

  it("records a password and a TOTP code as pwd otp mfa", async () => {
    const { email, key } = await withFactor();
    const tokens = v.parse(
      LoginTokens,
      await (await verify(await challenge(email), { code: await codeAt(key, 1) })).json(),
    );
    expect(await amrOf(tokens.token)).toEqual({ shown: ["pwd", "otp", "mfa"], stored: "pwd otp mfa" });
  });

  it("records a password and a recovery code as pwd rec mfa", async () => {
    const { email, recoveryCodes } = await withFactor();
    const tokens = v.parse(
      LoginTokens,
      await (await verify(await challenge(email), { recovery_code: recoveryCodes[0]! })).json(),
    );
    expect(await amrOf(tokens.token)).toEqual({ shown: ["pwd", "rec", "mfa"], stored: "pwd rec mfa" });
  });
});

describe("recovery codes", () => {
  it("opens a session once each, typed in any case, without dashes, with look-alikes, and mails how many are left", async () => {
    const { email, recoveryCodes } = await withFactor();
    const typed = recoveryCodes[0]!.toLowerCase().replace(/-/g, " ").replace(/0/g, "o").replace(/1/g, "l");
    expect((await verify(await challenge(email), { recovery_code: typed })).status).toBe(200);
    expect(await textOf(await verify(await challenge(email), { recovery_code: recoveryCodes[0]! }))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidMfaCode,
    });
    const notices = await mailsWithSubject(email, "Recovery Code Used");
    expect(notices.at(-1)?.text).toContain("9 recovery codes are left");
  });

  it("opens exactly one session for 10 concurrent uses of one code", async () => {
    const { email, recoveryCodes } = await withFactor();
    const tokens: string[] = [];
    for (let i = 0; i < 10; i++) tokens.push(await challenge(email));
    const responses = await Promise.all(
      tokens.map((mfaToken) => verify(mfaToken, { recovery_code: recoveryCodes[1]! })),
    );
    expect(tally(responses)).toEqual({ 200: 1, 401: 9 });
  });

  it("are replaced by a new set for a current code; the old set dies", async () => {
    const { email, key, recoveryCodes, session } = await withFactor();
    const response = await call(
      "POST",
      "/auth/mfa/recovery-codes",
      { code: await codeAt(key, 1) },
      bearer(session.token),
    );
    const fresh = v.parse(RecoveryCodes, await response.json()).recovery_codes;
    expect(fresh).not.toContain(recoveryCodes[0]);
    expect((await verify(await challenge(email), { recovery_code: recoveryCodes[0]! })).status).toBe(401);
    expect((await verify(await challenge(email), { recovery_code: fresh[0]! })).status).toBe(200);
  });

  it("are replaced for a recovery code too (the phone is lost): that code and the rest of the old set die", async () => {
    const { email, recoveryCodes, session } = await withFactor();
    const response = await call("POST", "/auth/mfa/recovery-codes", { code: recoveryCodes[0]! }, bearer(session.token));
    const fresh = v.parse(RecoveryCodes, await response.json()).recovery_codes;
    for (const old of recoveryCodes.slice(0, 2))
      expect((await verify(await challenge(email), { recovery_code: old })).status).toBe(401);
    expect((await verify(await challenge(email), { recovery_code: fresh[0]! })).status).toBe(200);
  });
});

describe("step-up and removal", () => {
  it.each([
    ["change-password", "POST", "/auth/change-password", { current_password: PASSWORD, new_password: NEW_PASSWORD }],
    ["change-email", "POST", "/auth/change-email", { password: PASSWORD, new_email: "stepped@example.com" }],
    ["delete account", "DELETE", "/auth/account", { password: PASSWORD }],
  ] as const)(
    "%s needs a current code while the factor is on: none or a wrong one is a 401, a recovery code passes",
    async (_name, method, path, body) => {
      const { recoveryCodes, session } = await withFactor();
      expect(await textOf(await call(method, path, body, bearer(session.token)))).toEqual({
        status: 401,
        type: TEXT,
        body: AuthMessage.mfaCodeRequired,
      });
      expect(await textOf(await call(method, path, { ...body, code: "12345" }, bearer(session.token)))).toEqual({
        status: 401,
        type: TEXT,
        body: AuthMessage.invalidMfaCode,
      });
      const passed = await call(
        method,
        path,
        { ...body, new_email: `stepped-${crypto.randomUUID()}@example.com`, code: recoveryCodes[2]! },
        bearer(session.token),
      );
      expect([200, 204]).toContain(passed.status);
    },
  );

  it("turns the factor off with the password and a code: 204, other sessions end, a notice, and logins ask no code", async () => {
    const { email, key, recoveryCodes, session } = await withFactor();
    const other = v.parse(
      LoginTokens,
      await (await verify(await challenge(email), { code: await codeAt(key, 1) })).json(),
    );
    expect(await textOf(await call("DELETE", "/auth/mfa/totp", { password: PASSWORD }, bearer(session.token)))).toEqual(
      { status: 400, type: TEXT, body: AuthMessage.codeRequired },
    );
    expect(
      await textOf(
        await call(
          "DELETE",
          "/auth/mfa/totp",
          { password: "wrong password", code: recoveryCodes[3]! },
          bearer(session.token),
        ),
      ),
    ).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.wrongPassword,
    });
    expect(
      (await call("DELETE", "/auth/mfa/totp", { password: PASSWORD, code: recoveryCodes[3]! }, bearer(session.token)))
        .status,
    ).toBe(204);
    await expectEnded(other);
    expect(await jsonOf(await me(session.token))).toMatchObject({
      body: { mfa: { totp: false, recovery_codes_remaining: 0 } },
    });
    expect(await mailsWithSubject(email, "Two-Factor Authentication Turned Off")).toHaveLength(1);
    expect(v.parse(LoginTokens, await (await postLogin(email)).json()).token).not.toBe("");
  });
});
