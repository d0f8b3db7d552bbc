/**
 * The audit log's writer (src/audit/writer.ts) as the flows use it: each event in the batch of its change, with its
 * fields; never a secret; failed sign-ins capped per account and hour, decided atomically.
 */
import { env } from "cloudflare:workers";
import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import { base32Decode, stepAt, totpAt } from "../../src/lib/totp";
import { FAILED_SIGN_INS_PER_HOUR } from "../../src/audit/policy";
import {
  account,
  bearer,
  confirmEmailChange,
  emailChangeCode,
  lastRequestId,
  logIn,
  NEW_PASSWORD,
  postLogin,
  refresh,
  reset,
  resetCode,
  revertTokenMailed,
  sessionIdOf,
  type Tokens,
} from "../support/accounts";
import { identityClaims, socialLogIn } from "../support/oauth";
import { userIdOf } from "../support/admin";
import { allEvents, eventsOf, eventsOfDeleted, typesOf } from "../support/audit";
import { call, callWithEnv, count, PASSWORD, randomEmail, tally, TEXT, textOf } from "../support/app";
import { mailedCode } from "../support/mail";
import { registeredPasskey, signIn as passkeySignIn } from "../auth/passkeys/support";

const CLIENT = { "CF-Connecting-IP": "198.51.100.23", "User-Agent": "Audit-Test/1.0 (run)" };

const LoginTokens = v.object({ token: v.string(), refresh_token: v.string(), device_token: v.string() });

describe("the events of a whole run", () => {
  it("records each change with its event, and never a password, code, token, secret or TOTP seed", async () => {
    const used: string[] = [PASSWORD, NEW_PASSWORD];
    const email = randomEmail();
    expect((await call("POST", "/auth/register", { email, password: PASSWORD }, CLIENT)).status).toBe(201);
    const verification = await mailedCode(email);
    used.push(verification);
    expect((await call("POST", "/auth/verify-email", { email, token: verification }, CLIENT)).status).toBe(200);
    const id = await userIdOf(email);

    const login = v.parse(
      LoginTokens,
      await (await call("POST", "/auth/login", { email, password: PASSWORD }, CLIENT)).json(),
    );
    used.push(login.token, login.refresh_token, login.device_token);
    // A failed sign-in is recorded after its answer: callWithEnv waits for that.
    expect((await callWithEnv({}, "POST", "/auth/login", { email, password: "not it at all" }, CLIENT)).status).toBe(
      401,
    );

    // A passkey: added, signed in with, removed.
    const { passkey, id: passkeyId } = await registeredPasskey(login.token);
    const passkeyLogin = v.parse(LoginTokens, await (await passkeySignIn(passkey)).json());
    used.push(passkeyLogin.token, passkeyLogin.refresh_token);
    const removed = await call("DELETE", `/auth/passkeys/${passkeyId}`, { password: PASSWORD }, bearer(login.token));
    expect(removed.status).toBe(204);

    // Two-factor authentication: the secret, the codes, the recovery codes, a second step.
    const enrolled = v.parse(
      v.object({ secret: v.string() }),
      await (await call("POST", "/auth/mfa/totp", { password: PASSWORD }, bearer(login.token))).json(),
    );
    const key = base32Decode(enrolled.secret);
    const firstCode = await totpAt(key, stepAt(Date.now()));
    const confirmed = await call("POST", "/auth/mfa/totp/confirm", { code: firstCode }, bearer(login.token));
    const { recovery_codes: recoveryCodes } = v.parse(
      v.object({ recovery_codes: v.array(v.string()) }),
      await confirmed.json(),
    );
    used.push(
      enrolled.secret,
      firstCode,
      ...recoveryCodes,
      [...key].map((b) => b.toString(16).padStart(2, "0")).join(""),
    );
    const challenge = v.parse(v.object({ mfa_token: v.string() }), await (await postLogin(email)).json());
    used.push(challenge.mfa_token);
    const second = await call("POST", "/auth/mfa/verify", {
      mfa_token: challenge.mfa_token,
      recovery_code: recoveryCodes[0],
    });
    const secondTokens = v.parse(LoginTokens, await second.json());
    used.push(secondTokens.token, secondTokens.refresh_token, secondTokens.device_token);

    // A reset: the code, the request id, the new password.
    const resetTo = await resetCode(email);
    used.push(resetTo, lastRequestId(email));
    expect((await reset(email, resetTo)).status).toBe(200);

    expect(await typesOf(id)).toEqual([
      "user.registered",
      "user.verified",
      "user.signed_in",
      "user.sign_in_failed",
      "passkey.added",
      "user.signed_in",
      "passkey.removed",
      "mfa.enabled",
      "user.signed_in",
      "user.password_reset",
    ]);
    const events = await eventsOf(id);
    expect(events[0]).toMatchObject({
      actor: "user",
      ip: "198.51.100.0/24",
      user_agent: "Audit-Test/1.0 (run)",
      data: { email, method: "password" },
    });
    expect(events[2]!.data).toEqual({ amr: ["pwd"], session_id: expect.any(String) });
    expect(events[3]!.data).toEqual({ reason: "password" });
    expect(events[4]!.data).toEqual({ passkey_id: passkeyId, name: expect.any(String) });
    expect(events[5]!.data).toEqual({ amr: ["hwk", "mfa"], session_id: expect.any(String) });
    expect(events[6]!.data).toEqual({ passkey_id: passkeyId, name: expect.any(String) });
    expect(events[7]!.data).toEqual({ kind: "totp" });
    expect(events[8]!.data).toEqual({ amr: ["pwd", "rec", "mfa"], session_id: expect.any(String) });

    // Every field of every event of the database, searched for every value the run used.
    const text = (await allEvents())
      .map((row) => [row.id, row.type, row.actor, row.ip, row.user_agent, row.data].join("\n"))
      .join("\n");
    for (const value of used) expect(text).not.toContain(value);
  }, 30_000);
});

describe("the events of the account's other changes", () => {
  it("records the address, sessions, providers, the password and the deletion, each with its actor", async () => {
    const email = await account();
    const id = await userIdOf(email);
    const [mine, other, third] = [await logIn(email), await logIn(email), await logIn(email)];
    // A session ended from the list, then every other one.
    expect(
      (await call("DELETE", `/auth/sessions/${sessionIdOf(other.token)}`, undefined, bearer(mine.token))).status,
    ).toBe(204);
    expect((await call("DELETE", "/auth/sessions", undefined, bearer(mine.token))).status).toBe(204);
    // A refresh token used again after its grace: the service revokes the session.
    const fresh = await logIn(email);
    expect((await refresh(fresh.refresh_token)).status).toBe(200);
    await env.DB.prepare("UPDATE sessions SET rotated_at = ? WHERE id = ?")
      .bind(Date.now() - 11_000, sessionIdOf(fresh.token))
      .run();
    expect((await refresh(fresh.refresh_token)).status).toBe(401);
    // The address changed, and the change undone.
    const newEmail = randomEmail("moved");
    const code = await emailChangeCode(email, mine.token, newEmail);
    expect((await confirmEmailChange(mine.token, code)).status).toBe(200);
    expect((await call("POST", "/auth/revert-email-change", { token: await revertTokenMailed(email) })).status).toBe(
      200,
    );
    // A provider linked by its sign-in, then unlinked (a password is set again first: the undo cleared it).
    expect((await reset(email, await resetCode(email))).status).toBe(200);
    const social = await socialLogIn("google", identityClaims({ email }));
    expect((await call("DELETE", "/auth/identities/google", undefined, bearer(social.token))).status).toBe(204);
    const last = await logIn(email, { password: NEW_PASSWORD });
    expect(
      (
        await call(
          "POST",
          "/auth/change-password",
          { current_password: NEW_PASSWORD, new_password: PASSWORD },
          bearer(last.token),
        )
      ).status,
    ).toBe(200);
    expect((await call("DELETE", "/auth/account", { password: PASSWORD }, bearer(last.token))).status).toBe(204);

    const events = (await eventsOfDeleted(id)).filter((event) => event.type !== "user.signed_in");
    expect(events.map((event) => [event.type, event.actor, event.data])).toEqual([
      ["user.registered", "user", { email, method: "password" }],
      ["user.verified", "user", { email }],
      ["session.revoked", "user", { session_ids: [sessionIdOf(other.token)], reason: "signed_out" }],
      ["session.revoked", "user", { session_ids: [sessionIdOf(third.token)], reason: "signed_out" }],
      ["session.revoked", "system", { session_ids: [sessionIdOf(fresh.token)], reason: "refresh_token_reused" }],
      ["user.email_changed", "user", { old_email: email, new_email: newEmail }],
      ["user.email_change_reverted", "user", { email }],
      ["user.password_reset", "user", {}],
      ["identity.linked", "user", { provider: "google" }],
      ["identity.unlinked", "user", { provider: "google" }],
      ["user.password_changed", "user", {}],
      ["user.deleted", "user", { email }],
    ]);
  }, 30_000);
});

describe("an event and its change are one batch", () => {
  afterEach(async () => {
    await env.DB.prepare("DROP TRIGGER IF EXISTS fail_event").run();
    await env.DB.prepare("DROP TRIGGER IF EXISTS fail_change").run();
  });

  it("leaves the password unchanged when its event cannot be written, and writes no event when the change fails", async () => {
    const email = await account();
    const id = await userIdOf(email);
    const tokens: Tokens = await logIn(email);
    const change = () =>
      call(
        "POST",
        "/auth/change-password",
        { current_password: PASSWORD, new_password: NEW_PASSWORD },
        bearer(tokens.token),
      );
    // The batch fails at the event's INSERT: the UPDATE before it in the same batch is rolled back.
    await env.DB.prepare(
      "CREATE TRIGGER fail_event BEFORE INSERT ON audit_events WHEN NEW.type = 'user.password_changed' BEGIN SELECT RAISE(ABORT, 'audit refused'); END",
    ).run();
    expect(await textOf(await change())).toEqual({ status: 500, type: TEXT, body: "Internal server error." });
    expect((await postLogin(email)).status).toBe(200);
    expect((await postLogin(email, NEW_PASSWORD)).status).toBe(401);
    expect(await eventsOf(id, "user.password_changed")).toEqual([]);
    await env.DB.prepare("DROP TRIGGER fail_event").run();

    // The batch fails at the change itself: no event.
    await env.DB.prepare(
      "CREATE TRIGGER fail_change BEFORE UPDATE OF password ON users BEGIN SELECT RAISE(ABORT, 'change refused'); END",
    ).run();
    expect((await change()).status).toBe(500);
    expect(await eventsOf(id, "user.password_changed")).toEqual([]);
    await env.DB.prepare("DROP TRIGGER fail_change").run();

    expect((await change()).status).toBe(200);
    expect(await eventsOf(id, "user.password_changed")).toEqual([expect.objectContaining({ actor: "user" })]);
  });
});

describe("the client's address", () => {
  it.each([
    ["203.0.113.254", "203.0.113.0/24"],
    ["2001:db8:abcd:12::1", "2001:db8:abcd::/48"],
    ["::ffff:192.0.2.9", "192.0.2.0/24"],
    ["not an address", null],
  ])("keeps %s as %s", async (address, kept) => {
    const email = await account();
    await call("POST", "/auth/login", { email, password: PASSWORD }, { "CF-Connecting-IP": address });
    const [signedIn] = await eventsOf(await userIdOf(email), "user.signed_in");
    expect(signedIn!.ip).toBe(kept);
  });
});

describe("failed sign-ins", () => {
  it(`records at most ${FAILED_SIGN_INS_PER_HOUR} an hour per account, the last counting the rest, under bursts`, async () => {
    const email = await account();
    const id = await userIdOf(email);
    // Three bursts of ten wrong passwords (ten lock the address: the lock is lifted between bursts).
    for (let burst = 0; burst < 3; burst++) {
      const answers = await Promise.all(
        Array.from({ length: 10 }, () =>
          callWithEnv({}, "POST", "/auth/login", { email, password: "wrong password!" }),
        ),
      );
      expect(tally(answers)).toEqual({ 401: 10 });
      await env.DB.prepare("DELETE FROM login_failures WHERE email = ?").bind(email).run();
    }
    const failed = await eventsOf(id, "user.sign_in_failed");
    expect(failed).toHaveLength(FAILED_SIGN_INS_PER_HOUR);
    expect(failed.slice(0, -1).every((event) => event.data.suppressed === undefined)).toBe(true);
    expect(failed.at(-1)!.data).toEqual({ reason: "password", suppressed: 30 - FAILED_SIGN_INS_PER_HOUR });
    expect(await count("SELECT failures AS n FROM audit_failed_sign_in_windows WHERE user_id = ?", id)).toBe(30);

    // A new hour records again.
    await env.DB.prepare("UPDATE audit_failed_sign_in_windows SET window_start = ? WHERE user_id = ?")
      .bind(Date.now() - 3_600_001, id)
      .run();
    await callWithEnv({}, "POST", "/auth/login", { email, password: "wrong password!" });
    expect(await eventsOf(id, "user.sign_in_failed")).toHaveLength(FAILED_SIGN_INS_PER_HOUR + 1);
  });

  it("records none for an address without an account", async () => {
    const before = await count("SELECT count(*) AS n FROM audit_events");
    await callWithEnv({}, "POST", "/auth/login", { email: randomEmail(), password: "wrong password!" });
    expect(await count("SELECT count(*) AS n FROM audit_events")).toBe(before);
  });
});
