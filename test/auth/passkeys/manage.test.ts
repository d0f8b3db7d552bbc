import { afterEach, describe, expect, it, vi } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { bearer, expectEnded } from "../../support/accounts";
import { call, callWithEnv, JSON_TYPE, jsonOf, PASSWORD, TEXT, textOf } from "../../support/app";
import { mailsWithSubject } from "../../support/mail";
import {
  INVALID_PASSKEY,
  registeredPasskey,
  signedInAccount,
  signIn,
  storedPasskeys,
  totpCode,
  turnOnTotp,
} from "./support";

/** The caller's passkeys (src/auth/passkeys/manage.ts): list, rename, remove. */

afterEach(() => {
  vi.restoreAllMocks();
});

const REMOVED = "A Passkey Was Removed from Your Account";
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const list = (token: string) => call("GET", "/auth/passkeys", undefined, bearer(token));
const rename = (token: string, id: string, body: unknown) => call("PATCH", `/auth/passkeys/${id}`, body, bearer(token));
const remove = (token: string, id: string, body: Record<string, unknown> = { password: PASSWORD }) =>
  call("DELETE", `/auth/passkeys/${id}`, body, bearer(token));

describe("GET /auth/passkeys", () => {
  it("lists the caller's passkeys, oldest first, with when each was last used, and nobody else's", async () => {
    const { session } = await signedInAccount();
    expect(await jsonOf(await list(session.token))).toEqual({ status: 200, type: JSON_TYPE, body: [] });
    const first = await registeredPasskey(session.token);
    const second = await registeredPasskey(session.token, { counting: false, flags: { be: true, bs: true } });
    const other = await signedInAccount();
    await registeredPasskey(other.session.token);
    expect((await signIn(first.passkey)).status).toBe(200);
    const { status, body } = await jsonOf(await list(session.token));
    expect(status).toBe(200);
    expect(body).toEqual([
      {
        id: first.id,
        name: "Passkey",
        created_at: expect.stringMatching(ISO),
        last_used_at: expect.stringMatching(ISO),
        backed_up: false,
        counter_regressed_at: null,
      },
      {
        id: second.id,
        name: "Passkey",
        created_at: expect.stringMatching(ISO),
        last_used_at: null,
        backed_up: true,
        counter_regressed_at: null,
      },
    ]);
  });

  it("answers 401 without a live session, and works while passkeys are not set up", async () => {
    const { session } = await signedInAccount();
    expect(
      (await callWithEnv({ WEBAUTHN_RP_ID: "" }, "GET", "/auth/passkeys", undefined, bearer(session.token))).status,
    ).toBe(200);
    expect((await call("POST", "/auth/logout", undefined, bearer(session.token))).status).toBe(204);
    expect(await textOf(await list(session.token))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidAccessToken,
    });
  });
});

describe("PATCH /auth/passkeys/{id}", () => {
  it("renames the passkey (trimmed) and answers it", async () => {
    const { email, session } = await signedInAccount();
    const { id } = await registeredPasskey(session.token);
    const { status, body } = await jsonOf(await rename(session.token, id, { name: "  Work laptop " }));
    expect(status).toBe(200);
    expect(body).toEqual({
      id,
      name: "Work laptop",
      created_at: expect.stringMatching(ISO),
      last_used_at: null,
      backed_up: false,
      counter_regressed_at: null,
    });
    expect((await storedPasskeys(email))[0]).toMatchObject({ name: "Work laptop" });
  });

  it("answers 400 for a missing, blank, too long or non-string name", async () => {
    const { session } = await signedInAccount();
    const { id } = await registeredPasskey(session.token);
    for (const [body, message] of [
      [{}, AuthMessage.passkeyNameRequired],
      [{ name: " " }, AuthMessage.passkeyNameRequired],
      [{ name: 3 }, AuthMessage.passkeyNameString],
      [{ name: "é".repeat(65) }, AuthMessage.passkeyNameInvalid],
    ] as const) {
      expect(await textOf(await rename(session.token, id, body))).toEqual({ status: 400, type: TEXT, body: message });
    }
    expect((await rename(session.token, id, { name: "é".repeat(64) })).status).toBe(200);
  });

  it("answers 404 for another account's passkey or none, and leaves theirs as it was", async () => {
    const mine = await signedInAccount();
    const theirs = await signedInAccount();
    const { id } = await registeredPasskey(theirs.session.token);
    for (const target of [id, "no-such-passkey"]) {
      expect(await textOf(await rename(mine.session.token, target, { name: "Mine now" }))).toEqual({
        status: 404,
        type: TEXT,
        body: AuthMessage.passkeyNotFound,
      });
    }
    expect((await storedPasskeys(theirs.email))[0]).toMatchObject({ name: "Passkey" });
  });
});

describe("DELETE /auth/passkeys/{id}", () => {
  it("removes the passkey with the password: 204, a notice mailed, and it no longer signs in", async () => {
    const { email, session } = await signedInAccount();
    const { passkey, id } = await registeredPasskey(session.token);
    await call("PATCH", `/auth/passkeys/${id}`, { name: "Old phone" }, bearer(session.token));
    const response = await remove(session.token, id);
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    expect(await storedPasskeys(email)).toEqual([]);
    expect((await mailsWithSubject(email, REMOVED)).map((mail) => mail.text)).toEqual([
      'The passkey named "Old phone" was removed from your account and no longer signs in. If this was not you, change your password now: whoever did it knows it.',
    ]);
    expect(await textOf(await signIn(passkey))).toEqual(INVALID_PASSKEY);
  });

  it("answers 404 for another account's passkey, which keeps signing in", async () => {
    const mine = await signedInAccount();
    const theirs = await signedInAccount();
    const { passkey, id } = await registeredPasskey(theirs.session.token);
    expect(await textOf(await remove(mine.session.token, id))).toEqual({
      status: 404,
      type: TEXT,
      body: AuthMessage.passkeyNotFound,
    });
    expect((await signIn(passkey)).status).toBe(200);
  });

  it("answers 401 for a missing password (not counted) and a wrong one (counted: the fifth ends the session)", async () => {
    const { session } = await signedInAccount();
    const { id } = await registeredPasskey(session.token);
    expect(await textOf(await remove(session.token, id, {}))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.passwordRequired,
    });
    for (let i = 0; i < 5; i++) {
      expect(await textOf(await remove(session.token, id, { password: "wrong password" }))).toEqual({
        status: 401,
        type: TEXT,
        body: AuthMessage.wrongPassword,
      });
    }
    await expectEnded(session);
  });

  it("with TOTP on, needs a current code too", async () => {
    const { email, session } = await signedInAccount();
    const { id } = await registeredPasskey(session.token);
    const secret = await turnOnTotp(session.token);
    expect(await textOf(await remove(session.token, id))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.mfaCodeRequired,
    });
    expect(await textOf(await remove(session.token, id, { password: PASSWORD, code: "000000" }))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidMfaCode,
    });
    expect((await remove(session.token, id, { password: PASSWORD, code: await totpCode(secret, 1) })).status).toBe(204);
    expect(await storedPasskeys(email)).toEqual([]);
  });
});
