import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DAY } from "../../../src/lib/units";
import {
  bearer,
  confirmEmailChange,
  emailChangeCode,
  logIn,
  NEW_PASSWORD,
  PASSWORD_CHANGED_TEXT,
  reset,
  resetCode,
  revertTokenMailed,
  storedUser,
} from "../../support/accounts";
import { call, count, fireCron, PASSWORD, randomEmail, textOf } from "../../support/app";
import { mailsWithSubject, Subject } from "../../support/mail";
import {
  expireChallenge,
  INVALID_PASSKEY,
  registeredPasskey,
  requestOptions,
  signedInAccount,
  signIn,
  storedChallenge,
  storedPasskeys,
} from "./support";

/**
 * Passkeys across the account's life: deleting the account takes them with it; a new password (reset or
 * change) leaves them, and the notice says so; undoing an e-mail change removes those its rule names
 * (test/auth/account/revert-store.test.ts has the rule's every case).
 */

describe("passkeys and the account's life", () => {
  it("go with the account: after DELETE /auth/account the rows are gone and the old credential is a 401", async () => {
    const { email, session } = await signedInAccount();
    const { passkey } = await registeredPasskey(session.token);
    const userId = (await storedUser(email))!.id;
    expect((await call("DELETE", "/auth/account", { password: PASSWORD }, bearer(session.token))).status).toBe(204);
    expect(await count("SELECT count(*) AS n FROM passkeys WHERE user_id = ?", userId)).toBe(0);
    expect(await count("SELECT count(*) AS n FROM passkey_challenges WHERE user_id = ?", userId)).toBe(0);
    expect(await textOf(await signIn(passkey))).toEqual(INVALID_PASSKEY);
  });

  it("stay through a password reset, which says so in its notice, and keep signing in", async () => {
    const { email, session } = await signedInAccount();
    const { passkey } = await registeredPasskey(session.token);
    expect((await reset(email, await resetCode(email))).status).toBe(200);
    expect(await storedPasskeys(email)).toHaveLength(1);
    expect((await signIn(passkey)).status).toBe(200);
    const notices = await mailsWithSubject(email, Subject.passwordChanged);
    expect(notices.map((mail) => mail.text)).toEqual([PASSWORD_CHANGED_TEXT]);
    expect(PASSWORD_CHANGED_TEXT).toContain("Your passkeys stay in place and still sign in");
  });

  it("stay through a password change, which says so in its notice, and keep signing in", async () => {
    const { email, session } = await signedInAccount();
    const { passkey } = await registeredPasskey(session.token);
    const changed = await call(
      "POST",
      "/auth/change-password",
      { current_password: PASSWORD, new_password: NEW_PASSWORD },
      bearer(session.token),
    );
    expect(changed.status).toBe(200);
    expect((await signIn(passkey)).status).toBe(200);
    expect((await mailsWithSubject(email, Subject.passwordChanged)).map((mail) => mail.text)).toEqual([
      PASSWORD_CHANGED_TEXT,
    ]);
  });

  it("added after an e-mail change are removed when the change is undone; older ones of another session stay", async () => {
    const { email: owner, session } = await signedInAccount();
    const before = await registeredPasskey(session.token);
    // Older than what an undo removes (EMAIL_CHANGE_LOOKBACK_MS before the change), and not the changing session's.
    await env.DB.prepare("UPDATE passkeys SET created_at = ? WHERE id = ?")
      .bind(Date.now() - 2 * DAY, before.id)
      .run();
    const thiefSession = await logIn(owner);
    const thief = randomEmail("thief");
    expect(
      (await confirmEmailChange(thiefSession.token, await emailChangeCode(owner, thiefSession.token, thief))).status,
    ).toBe(200);
    const added = await registeredPasskey(thiefSession.token);
    expect((await call("POST", "/auth/revert-email-change", { token: await revertTokenMailed(owner) })).status).toBe(
      200,
    );
    expect((await storedPasskeys(owner)).map((passkey) => passkey.id)).toEqual([before.id]);
    expect(await textOf(await signIn(added.passkey))).toEqual(INVALID_PASSKEY);
    expect((await signIn(before.passkey)).status).toBe(200);
  });

  it("leave no challenge behind: the hourly clean-up deletes those past their five minutes and keeps live ones", async () => {
    const [gone, live] = [await requestOptions(), await requestOptions()];
    await expireChallenge(gone.challenge);
    await fireCron();
    expect(await storedChallenge(gone.challenge)).toBeNull();
    expect(await storedChallenge(live.challenge)).not.toBeNull();
  });
});
