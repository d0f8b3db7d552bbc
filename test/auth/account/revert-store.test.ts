import { env } from "cloudflare:workers";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { DAY, HOUR } from "../../../src/lib/units";
import {
  account,
  bearer,
  changedAtOf,
  confirmEmailChange,
  confirmedNoticeText,
  emailChangeCode,
  expectEnded,
  logIn,
  me,
  NEW_PASSWORD,
  pastCooldown,
  postLogin,
  reset,
  resetCode,
  revertTokenMailed,
  storedUser,
  undoSince,
  type Tokens,
} from "../../support/accounts";
import { call, count, JSON_TYPE, jsonOf, PASSWORD, randomEmail, tally, TEXT, textOf } from "../../support/app";
import { CodePrefix, codeIn, mailsWithSubject, Subject } from "../../support/mail";
import { identityClaims, socialLogIn } from "../../support/oauth";
import { SoftwarePasskey } from "../passkeys/authenticator";
import { INVALID_PASSKEY, PasskeyAnswer, registerWith, signIn, storedPasskeys, totpCode } from "../passkeys/support";

/**
 * The rule the undo of an e-mail change follows (src/auth/account/revert-store.ts, docs/threat-model/email-change.md),
 * one test per adversary and finding: what the changing session added however early (N2), what came through the new
 * address (N1) or from EMAIL_CHANGE_LOOKBACK_MS (1 day) before the change, the owner's own additions at the new
 * address (N8, and the window an older second factor narrows), the notices' exact lists, and a burst.
 */

const UNDONE = { status: 200, type: TEXT, body: AuthMessage.emailChangeReverted };

function revert(token: string): Promise<Response> {
  return call("POST", "/auth/revert-email-change", { token });
}

/** A passkey named `name` registered by the session (expecting 201): the software passkey and its id. */
async function namedPasskey(token: string, name: string) {
  const passkey = await SoftwarePasskey.create();
  const response = await registerWith(token, passkey, { name });
  expect(response.status).toBe(201);
  return { passkey, id: v.parse(PasskeyAnswer, await response.json()).id };
}

/** Moves a row's created_at `ms` back, as if it had been added that long ago. */
async function addedAgo(
  table: "passkeys" | "mfa_factors" | "oauth_identities",
  where: string,
  key: unknown,
  ms: number,
) {
  await env.DB.prepare(`UPDATE ${table} SET created_at = created_at - ? WHERE ${where} = ?`).bind(ms, key).run();
}

/** Turns TOTP on for the session's account, confirmed with the previous step's code: its secret and recovery codes. */
async function totpOn(token: string) {
  const enrolled = await call("POST", "/auth/mfa/totp", { password: PASSWORD }, bearer(token));
  const { secret } = v.parse(v.object({ secret: v.string() }), await enrolled.json());
  const confirmed = await call("POST", "/auth/mfa/totp/confirm", { code: await totpCode(secret, -1) }, bearer(token));
  expect(confirmed.status).toBe(200);
  const answer = v.parse(v.object({ recovery_codes: v.array(v.string()) }), await confirmed.json());
  return { secret, recoveryCodes: answer.recovery_codes };
}

const LoginTokens = v.object({ token: v.string(), refresh_token: v.string(), expires_in: v.number() });

/** A login of an account with TOTP on, through its second step with `proof` (expecting 200): the tokens. */
async function factorLogIn(email: string, proof: { code: string } | { recovery_code: string }): Promise<Tokens> {
  const first = v.parse(v.object({ mfa_token: v.string() }), await (await postLogin(email)).json());
  const second = await call("POST", "/auth/mfa/verify", { mfa_token: first.mfa_token, ...proof });
  expect(second.status).toBe(200);
  return v.parse(LoginTokens, await second.json());
}

/** The session changes the account's address to `newEmail` (with a TOTP `code` while it is on): the revert token. */
async function changeAddress(email: string, token: string, newEmail: string, code?: string): Promise<string> {
  if (code === undefined) {
    expect((await confirmEmailChange(token, await emailChangeCode(email, token, newEmail))).status).toBe(200);
    return revertTokenMailed(email);
  }
  await pastCooldown(email);
  const body = { password: PASSWORD, new_email: newEmail, code };
  expect((await call("POST", "/auth/change-email", body, bearer(token))).status).toBe(200);
  const [mail] = await mailsWithSubject(newEmail, Subject.confirmNewEmail);
  expect((await confirmEmailChange(token, codeIn(mail, CodePrefix.emailChange))).status).toBe(200);
  return revertTokenMailed(email);
}

/** When the undo of the change away from `oldEmail` stops working, as D1 holds it. */
async function undoExpiry(oldEmail: string): Promise<number | undefined> {
  const row = await env.DB.prepare("SELECT expires_at FROM email_change_reverts WHERE old_email = ?")
    .bind(oldEmail)
    .first<{ expires_at: number }>();
  return row?.expires_at;
}

async function identitiesOf(userId: number): Promise<string[]> {
  const { results } = await env.DB.prepare("SELECT provider FROM oauth_identities WHERE user_id = ? ORDER BY provider")
    .bind(userId)
    .all<{ provider: string }>();
  return results.map((row) => row.provider);
}

const TOTP_REMOVED = "two-factor authentication with an authenticator app, and its recovery codes";

/** The lines of an undo's notices after their first: what it removed, and the providers that still sign in. */
function listed(changedAt: number, removed: string[], providers: string[]): string[] {
  const since = undoSince(changedAt);
  return [
    removed.length === 0
      ? `Nothing else was removed: no passkey, second factor or linked sign-in had been added since ${since} or by the session that made the change.`
      : `Removed, as added since ${since} or by the session that made the change: ${removed.join("; ")}.`,
    providers.length === 0
      ? "No sign-in provider is linked to your account."
      : `Sign-ins linked to your account, which sign in without the password: ${providers.join(", ")}. Unlink any you do not recognise (DELETE /auth/identities/{provider}).`,
  ];
}

/**
 * Expects exactly one notice of the undo at each address, with their exact texts: `restored` got the account back from
 * `taken` (masked as `maskedRestored` and `maskedTaken`).
 */
async function expectUndoNotices(
  addresses: { restored: string; taken: string; maskedRestored: string; maskedTaken: string },
  changedAt: number,
  removed: string[],
  providers: string[] = [],
): Promise<void> {
  const lines = listed(changedAt, removed, providers);
  expect((await mailsWithSubject(addresses.restored, Subject.changeUndone)).map((mail) => mail.text)).toEqual([
    [
      `The change of your account's email address to ${addresses.maskedTaken} was undone with the link mailed to this address: this is its address again.`,
      "Every session was signed out and the password cleared: set a new one with forgot-password.",
      ...lines,
    ].join("\n"),
  ]);
  expect((await mailsWithSubject(addresses.taken, Subject.changedBack)).map((mail) => mail.text)).toEqual([
    [
      `The email address of your account was changed back to ${addresses.maskedRestored} with the undo link mailed to that address, so this address no longer signs in.`,
      "Every session was signed out and the password cleared.",
      ...lines,
      "If this was not you, someone who holds that mailbox has taken the account: contact us at once.",
    ].join("\n"),
  ]);
}

/** The addresses of an account of `account()` taken to an address of randomEmail(`prefix`). */
function takenTo(restored: string, taken: string, prefix: string) {
  return { restored, taken, maskedRestored: "u***@example.com", maskedTaken: `${prefix[0]}***@example.com` };
}

describe("the undo of an e-mail change: the phisher's additions", () => {
  it("removes the passkey and the TOTP factor the changing session added before the change, however long before; the owner's older passkey stays (N2)", async () => {
    const owner = await account();
    const userId = (await storedUser(owner))!.id;
    const own = await namedPasskey((await logIn(owner)).token, "Owner's laptop");
    await addedAgo("passkeys", "id", own.id, 3 * DAY);
    // The phisher signs in with the password and plants a passkey and a factor, then changes the address.
    const phisher = await logIn(owner);
    const planted = await namedPasskey(phisher.token, "Phisher's key");
    const { secret, recoveryCodes } = await totpOn(phisher.token);
    // Both older than the lookback: only the session that made the change ties them to it.
    await addedAgo("passkeys", "id", planted.id, 2 * DAY);
    await addedAgo("mfa_factors", "user_id", userId, 2 * DAY);
    const thief = randomEmail("thief");
    const revertToken = await changeAddress(owner, phisher.token, thief, await totpCode(secret));
    const changedAt = await changedAtOf(owner);

    expect(await textOf(await revert(revertToken))).toEqual(UNDONE);

    expect((await storedPasskeys(owner)).map((passkey) => passkey.id)).toEqual([own.id]);
    expect(await count("SELECT count(*) AS n FROM mfa_factors WHERE user_id = ?", userId)).toBe(0);
    expect(await count("SELECT count(*) AS n FROM mfa_recovery_codes WHERE user_id = ?", userId)).toBe(0);
    await expectEnded(phisher);
    expect(await textOf(await signIn(planted.passkey))).toEqual(INVALID_PASSKEY);
    expect(recoveryCodes).toHaveLength(10);
    // The owner's passkey signs in, with no code of the phisher's factor asked.
    expect((await signIn(own.passkey)).status).toBe(200);
    await expectUndoNotices(takenTo(owner, thief, "thief"), changedAt, ['the passkey "Phisher\'s key"', TOTP_REMOVED]);
  });

  it("removes what another session added within EMAIL_CHANGE_LOOKBACK_MS (1 day) before the change; other sessions' older additions stay", async () => {
    const owner = await account();
    const older = await namedPasskey((await logIn(owner)).token, "Older");
    await addedAgo("passkeys", "id", older.id, DAY + HOUR);
    // A second session of the phisher's, a moment before the first one changes the address.
    const recent = await namedPasskey((await logIn(owner)).token, "Recent");
    await addedAgo("passkeys", "id", recent.id, DAY - HOUR);
    const thief = randomEmail("thief");
    const revertToken = await changeAddress(owner, (await logIn(owner)).token, thief);
    const changedAt = await changedAtOf(owner);

    expect(await textOf(await revert(revertToken))).toEqual(UNDONE);

    expect((await storedPasskeys(owner)).map((passkey) => passkey.name)).toEqual(["Older"]);
    expect(await textOf(await signIn(recent.passkey))).toEqual(INVALID_PASSKEY);
    await expectUndoNotices(takenTo(owner, thief, "thief"), changedAt, ['the passkey "Recent"']);
  });

  it("unlinks a provider linked through the new address after the change, and the phisher's sign-in with it no longer reaches the account; the owner's older provider stays (N1)", async () => {
    const owner = await account();
    const ownerId = (await storedUser(owner))!.id;
    await socialLogIn("apple", identityClaims({ email: owner }));
    await addedAgo("oauth_identities", "user_id", ownerId, 2 * DAY);
    const phisher = await logIn(owner);
    const thief = randomEmail("thief");
    const revertToken = await changeAddress(owner, phisher.token, thief);
    const changedAt = await changedAtOf(owner);
    // A provider account of the phisher's that vouches for the new address signs in to the owner's account.
    const claims = identityClaims({ email: thief });
    const viaProvider = await socialLogIn("google", claims);
    expect(await jsonOf(await me(viaProvider.token))).toMatchObject({
      status: 200,
      type: JSON_TYPE,
      body: { id: ownerId, email: thief },
    });
    expect(await identitiesOf(ownerId)).toEqual(["apple", "google"]);

    expect(await textOf(await revert(revertToken))).toEqual(UNDONE);

    expect(await identitiesOf(ownerId)).toEqual(["apple"]);
    await expectEnded(viaProvider);
    await expectEnded(phisher);
    // The same sign-in again: the address is no longer the owner's account's, so it is a new account of the phisher's.
    const again = await socialLogIn("google", claims);
    const { body } = await jsonOf(await me(again.token));
    const signedIn = v.parse(v.object({ id: v.number(), email: v.string() }), body);
    expect(signedIn.email).toBe(thief);
    expect(signedIn.id).not.toBe(ownerId);
    expect(await identitiesOf(ownerId)).toEqual(["apple"]);
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", ownerId)).toBe(0);
    await expectUndoNotices(takenTo(owner, thief, "thief"), changedAt, ["the sign-in with google"], ["apple"]);
  });

  it("acts once when 20 undo requests with one token arrive together: one 200, one notice at each address, the planted passkey gone", async () => {
    const owner = await account();
    const phisher = await logIn(owner);
    const planted = await namedPasskey(phisher.token, "Planted");
    const thief = randomEmail("thief");
    const revertToken = await changeAddress(owner, phisher.token, thief);
    const changedAt = await changedAtOf(owner);

    const responses = await Promise.all(Array.from({ length: 20 }, () => revert(revertToken)));

    expect(tally(responses)).toEqual({ 200: 1, 401: 19 });
    expect(await storedPasskeys(owner)).toEqual([]);
    expect(await textOf(await signIn(planted.passkey))).toEqual(INVALID_PASSKEY);
    expect(await count("SELECT count(*) AS n FROM email_change_reverts WHERE old_email = ?", owner)).toBe(0);
    await expectUndoNotices(takenTo(owner, thief, "thief"), changedAt, ['the passkey "Planted"']);
  });

  it("says in both notices that nothing else was removed when nothing had been added", async () => {
    const owner = await account();
    const thief = randomEmail("thief");
    const revertToken = await changeAddress(owner, (await logIn(owner)).token, thief);
    const changedAt = await changedAtOf(owner);
    expect(await textOf(await revert(revertToken))).toEqual(UNDONE);
    await expectUndoNotices(takenTo(owner, thief, "thief"), changedAt, []);
  });
});

describe("the undo of an e-mail change: the owner's own change (N8)", () => {
  it("removes what the owner added at the new address too, as the confirmation mailed there said: whoever reads the old mailbox resets into an account without it", async () => {
    const owner = await account();
    const session = await logIn(owner);
    const newAddress = randomEmail("new");
    const revertToken = await changeAddress(owner, session.token, newAddress);
    const changedAt = await changedAtOf(owner);
    expect((await mailsWithSubject(newAddress, Subject.emailConfirmed)).map((mail) => mail.text)).toEqual([
      confirmedNoticeText("u***@example.com", changedAt),
    ]);
    // The owner protects the account at the new address.
    await namedPasskey(session.token, "New phone");
    await totpOn(session.token);

    // Whoever holds the old mailbox now undoes the change, and resets through it.
    expect(await textOf(await revert(revertToken))).toEqual(UNDONE);

    expect(await storedPasskeys(owner)).toEqual([]);
    expect(await count("SELECT count(*) AS n FROM mfa_factors WHERE user_id = ?", (await storedUser(owner))!.id)).toBe(
      0,
    );
    expect((await reset(owner, await resetCode(owner))).status).toBe(200);
    const login = await jsonOf(await postLogin(owner, NEW_PASSWORD));
    expect(login).toMatchObject({ status: 200, type: JSON_TYPE, body: { token: expect.any(String) } });
    expect(login.body).not.toHaveProperty("mfa_required");
    await expectUndoNotices(takenTo(owner, newAddress, "new"), changedAt, ['the passkey "New phone"', TOTP_REMOVED]);
  });

  it("leaves EMAIL_CHANGE_REVERT_PROVEN_TTL_MS (1 day) of the undo once the account signs in with a passkey from before the lookback that the changing session did not add; newer ones and the changing session's do not", async () => {
    const owner = await account();
    const older = await namedPasskey((await logIn(owner)).token, "Laptop");
    await addedAgo("passkeys", "id", older.id, 2 * DAY);
    const changer = await logIn(owner);
    const changers = await namedPasskey(changer.token, "The changer's");
    await addedAgo("passkeys", "id", changers.id, 2 * DAY);
    const newAddress = randomEmail("new");
    const revertToken = await changeAddress(owner, changer.token, newAddress);
    const full = (await changedAtOf(owner)) + 7 * DAY;
    expect(await undoExpiry(owner)).toBe(full);

    const recent = await namedPasskey(changer.token, "Recent");
    expect((await signIn(recent.passkey)).status).toBe(200);
    expect((await signIn(changers.passkey)).status).toBe(200);
    expect(await undoExpiry(owner)).toBe(full);

    const before = Date.now();
    expect((await signIn(older.passkey)).status).toBe(200);
    const after = Date.now();
    const narrowed = (await undoExpiry(owner))!;
    expect(narrowed).toBeGreaterThanOrEqual(before + DAY);
    expect(narrowed).toBeLessThanOrEqual(after + DAY);
    // Never more than it was: a later sign-in leaves it.
    expect((await signIn(older.passkey)).status).toBe(200);
    expect(await undoExpiry(owner)).toBe(narrowed);

    // Within that day the undo still works, by the same rule.
    expect(await textOf(await revert(revertToken))).toEqual(UNDONE);
    expect((await storedPasskeys(owner)).map((passkey) => passkey.name)).toEqual(["Laptop"]);
  });

  it("leaves 1 day of the undo once a login passes its second step with the TOTP factor from before the lookback; a recovery code does not", async () => {
    const owner = await account();
    const { secret, recoveryCodes } = await totpOn((await logIn(owner)).token);
    await addedAgo("mfa_factors", "user_id", (await storedUser(owner))!.id, 2 * DAY);
    const changer = await factorLogIn(owner, { recovery_code: recoveryCodes[0]! });
    const newAddress = randomEmail("new");
    await changeAddress(owner, changer.token, newAddress, await totpCode(secret));
    const full = (await changedAtOf(owner)) + 7 * DAY;

    await factorLogIn(newAddress, { recovery_code: recoveryCodes[1]! });
    expect(await undoExpiry(owner)).toBe(full);

    const before = Date.now();
    await factorLogIn(newAddress, { code: await totpCode(secret, 1) });
    const after = Date.now();
    const narrowed = (await undoExpiry(owner))!;
    expect(narrowed).toBeGreaterThanOrEqual(before + DAY);
    expect(narrowed).toBeLessThanOrEqual(after + DAY);
  });
});
