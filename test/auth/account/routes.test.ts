import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { Contract } from "../../contract";
import {
  account,
  bearer,
  changedAtOf,
  changedNoticeText,
  changeEmail,
  confirmedNoticeText,
  confirmEmailChange,
  emailChangeCode,
  expectEnded,
  heldLogin,
  lastRequestId,
  lockLogin,
  postLogin,
  logIn,
  loginFailuresRow,
  me,
  NEW_PASSWORD,
  otherCode,
  PASSWORD_CHANGED_TEXT,
  pastCooldown,
  quietRegister,
  refresh,
  reset,
  resetCode,
  revertTokenMailed,
  setCode,
  storedCode,
  storedUser,
  type Tokens,
} from "../../support/accounts";
import {
  call,
  callWithEnv,
  count,
  holdRequest,
  JSON_TYPE,
  jsonOf,
  PASSWORD,
  randomEmail,
  TEXT,
  textOf,
} from "../../support/app";
import { mailsTo, mailsWithSubject, Subject } from "../../support/mail";

/**
 * Account management (change password, change e-mail, delete the account: src/auth/account/), through
 * the deployed app's fetch handler, with the codes read from the mails the loopback SMTP server received.
 */

function changePassword(token: string, currentPassword: string, newPassword = NEW_PASSWORD): Promise<Response> {
  return call(
    "POST",
    "/auth/change-password",
    { current_password: currentPassword, new_password: newPassword },
    bearer(token),
  );
}

function deleteAccount(token: string, password = PASSWORD): Promise<Response> {
  return call("DELETE", "/auth/account", { password }, bearer(token));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("holdRequest (the helper the race tests rely on)", () => {
  it("changes nothing but the timing: a login held and released with nothing in between logs in", async () => {
    const email = await account();
    const held = await heldLogin(email);
    const response = await held.release();
    expect(response.status).toBe(200);
    expect((await me(((await response.json()) as Tokens).token)).status).toBe(200);
  });
});

describe("POST /auth/change-password", () => {
  it("changes the password, ends every other session, keeps the current one and mails a notice", async () => {
    const email = await account();
    const current = await logIn(email);
    const other = await logIn(email);

    expect(await textOf(await changePassword(current.token, PASSWORD))).toEqual({
      status: 200,
      type: TEXT,
      body: "Password changed.",
    });
    await expectEnded(other);
    expect((await me(current.token)).status).toBe(200);
    expect((await refresh(current.refresh_token)).status).toBe(200);

    expect(await textOf(await postLogin(email))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
    expect((await postLogin(email, NEW_PASSWORD)).status).toBe(200);
    expect(await mailsWithSubject(email, Subject.passwordChanged)).toEqual([
      { from: "Notes API Test <sender@notes.test>", subject: Subject.passwordChanged, text: PASSWORD_CHANGED_TEXT },
    ]);
  });

  it("leaves no other session to a login that checked the old password just before the change", async () => {
    const email = await account();
    const current = await logIn(email);
    const racing = await heldLogin(email);
    expect((await changePassword(current.token, PASSWORD)).status).toBe(200);

    // Refused, or a session as dead as the other ones the change ended; the current one stays.
    const response = await racing.release();
    if (response.status === 200) {
      await expectEnded((await response.json()) as Tokens);
    } else {
      expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: Contract.invalidCredentials });
    }
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", (await storedUser(email))!.id)).toBe(1);
  });

  it("answers 401 for a wrong current password and changes nothing", async () => {
    const email = await account();
    const current = await logIn(email);
    const other = await logIn(email);
    expect(await textOf(await changePassword(current.token, "not my password"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.wrongPassword,
    });
    expect((await postLogin(email)).status).toBe(200);
    expect((await me(other.token)).status).toBe(200);
    expect(await mailsWithSubject(email, Subject.passwordChanged)).toEqual([]);
  });

  it("ends the session at the fifth wrong current password, leaving the address's login alone", async () => {
    const email = await account();
    const { token } = await logIn(email);
    for (let i = 0; i < 5; i++)
      expect(await textOf(await changePassword(token, "not my password"))).toEqual({
        status: 401,
        type: TEXT,
        body: AuthMessage.wrongPassword,
      });

    expect(await textOf(await changePassword(token, PASSWORD))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidAccessToken,
    });
    expect((await me(token)).status).toBe(401);
    // Nothing changed, and the address is not locked: the right password still logs in.
    expect((await postLogin(email)).status).toBe(200);
  });

  it("answers 401 with WWW-Authenticate without a token, with a bad one, and with the token of an ended session", async () => {
    const { token } = await logIn(await account());
    expect((await call("POST", "/auth/logout", undefined, bearer(token))).status).toBe(204);
    for (const headers of [{}, { Authorization: "Bearer not-a-token" }, bearer(token)]) {
      const response = await call(
        "POST",
        "/auth/change-password",
        { current_password: PASSWORD, new_password: NEW_PASSWORD },
        headers,
      );
      expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: AuthMessage.invalidAccessToken });
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
    }
  });

  it("answers 400 plain text for a missing or mistyped field, or a new password register would refuse", async () => {
    const email = await account();
    const { token } = await logIn(email);
    for (const [body, message] of [
      [{ new_password: NEW_PASSWORD }, "Current and new password are required."],
      [{ current_password: PASSWORD }, "Current and new password are required."],
      [{ current_password: "", new_password: NEW_PASSWORD }, "Current and new password are required."],
      [{ current_password: PASSWORD, new_password: null }, "Current and new password are required."],
      [{ current_password: 12345678, new_password: NEW_PASSWORD }, "Current and new password must be strings."],
      [{ current_password: PASSWORD, new_password: ["x"] }, "Current and new password must be strings."],
      [{ current_password: PASSWORD, new_password: "short" }, "Password must be at least 8 characters long."],
      [{ current_password: PASSWORD, new_password: "é".repeat(37) }, "Password must be at most 72 bytes long (UTF-8)."],
    ] as const) {
      expect(await textOf(await call("POST", "/auth/change-password", body, bearer(token)))).toEqual({
        status: 400,
        type: TEXT,
        body: message,
      });
    }
    expect((await postLogin(email)).status).toBe(200);
    expect(await loginFailuresRow(email)).toBeNull();
  });
});

describe("POST /auth/change-email", () => {
  it("mails a confirmation code to the new address, and changes nothing yet", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const newEmail = randomEmail("new");
    const code = await emailChangeCode(email, token, newEmail);

    expect(await mailsWithSubject(newEmail, Subject.confirmNewEmail)).toEqual([
      {
        from: "Notes API Test <sender@notes.test>",
        subject: Subject.confirmNewEmail,
        text: `Your email change confirmation code is: ${code}`,
      },
    ]);
    expect(await mailsTo(email)).toEqual([]); // nothing to the old address yet
    const stored = await env.DB.prepare(
      "SELECT code, new_email, attempts FROM one_time_codes WHERE purpose = 'change_email' AND user_id = ?",
    )
      .bind((await storedUser(email))!.id)
      .first();
    expect(stored).toEqual({ code, new_email: newEmail, attempts: 0 });
    expect(await jsonOf(await me(token))).toMatchObject({ status: 200, body: { email } });
    expect(await storedUser(newEmail)).toBeNull();
  });

  it("answers 409 when the new address belongs to another account, and mails nothing", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const taken = randomEmail("taken");
    await quietRegister(taken);
    await pastCooldown(email);
    expect(await textOf(await changeEmail(token, taken.toUpperCase()))).toEqual({
      status: 409,
      type: TEXT,
      body: Contract.userExists,
    });
    expect(await mailsWithSubject(taken, Subject.confirmNewEmail)).toEqual([]);
  });

  it("answers 400 when the new address is the current one, in any letter case", async () => {
    const email = await account();
    const { token } = await logIn(email);
    await pastCooldown(email);
    for (const same of [email, ` ${email.toUpperCase()} `]) {
      expect(await textOf(await changeEmail(token, same))).toEqual({
        status: 400,
        type: TEXT,
        body: "The new email is the current one.",
      });
    }
  });

  it("answers 400 for an implausible new address", async () => {
    const { token } = await logIn(await account());
    for (const newEmail of [
      "not-an-email",
      "a@b",
      "new\u200B@example.com",
      "new <x@example.com>",
      `${"a".repeat(250)}@example.com`,
    ]) {
      expect(await textOf(await changeEmail(token, newEmail))).toEqual({
        status: 400,
        type: TEXT,
        body: "Please provide a valid email address.",
      });
    }
  });

  it("answers 401 for a wrong password, and mails nothing", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const newEmail = randomEmail("new");
    await pastCooldown(email);
    expect(await textOf(await changeEmail(token, newEmail, "not my password"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.wrongPassword,
    });
    expect(await mailsTo(newEmail)).toEqual([]);
    // Counted on the session, not on the address.
    expect(await loginFailuresRow(email)).toBeNull();
  });

  it("answers 429 with Retry-After for a second request within 60 seconds, and within 60 seconds of the registration mail", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const throttled = "Please wait before requesting another confirmation code.";

    const early = await changeEmail(token, randomEmail("early"));
    expect(await textOf(early)).toEqual({ status: 429, type: TEXT, body: throttled });

    const newEmail = randomEmail("new");
    await emailChangeCode(email, token, newEmail);
    const again = await changeEmail(token, newEmail);
    expect(await textOf(again)).toEqual({ status: 429, type: TEXT, body: throttled });
    const retryAfter = Number(again.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(55);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await mailsTo(newEmail)).toHaveLength(1);
  });

  it("answers 401 with WWW-Authenticate without a token", async () => {
    const response = await call("POST", "/auth/change-email", { password: PASSWORD, new_email: randomEmail() });
    expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: AuthMessage.invalidAccessToken });
    expect(response.headers.get("www-authenticate")).toBe("Bearer");
  });

  it("answers 400 plain text for a missing or mistyped field", async () => {
    const { token } = await logIn(await account());
    for (const [body, message] of [
      [{ new_email: "new@example.com" }, "Password and new email are required."],
      [{ password: PASSWORD }, "Password and new email are required."],
      [{ password: PASSWORD, new_email: "" }, "Password and new email are required."],
      [{ password: 1, new_email: "new@example.com" }, "Password and new email must be strings."],
      [{ password: PASSWORD, new_email: { address: "new@example.com" } }, "Password and new email must be strings."],
    ] as const) {
      expect(await textOf(await call("POST", "/auth/change-email", body, bearer(token)))).toEqual({
        status: 400,
        type: TEXT,
        body: message,
      });
    }
  });
});

describe("POST /auth/confirm-email-change", () => {
  it("switches the address, notifies the old one, ends every other session and keeps the current one", async () => {
    const email = await account();
    const current = await logIn(email);
    const other = await logIn(email);
    const newEmail = randomEmail("new");
    const code = await emailChangeCode(email, current.token, newEmail);
    const userId = (await storedUser(email))!.id;

    expect(await textOf(await confirmEmailChange(current.token, code))).toEqual({
      status: 200,
      type: TEXT,
      body: "Email changed.",
    });
    expect(await jsonOf(await me(current.token))).toMatchObject({
      status: 200,
      type: JSON_TYPE,
      body: { id: userId, email: newEmail, verified: true },
    });
    expect((await refresh(current.refresh_token)).status).toBe(200);
    await expectEnded(other);

    expect((await postLogin(newEmail)).status).toBe(200);
    expect(await textOf(await postLogin(email))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
    // The old address gets the undo, the new one the rule an undo follows (N8): both name the moment it removes from.
    const [changedAt, revertToken] = [await changedAtOf(email), await revertTokenMailed(email)];
    const link = `http://api.test/auth/revert-email-change?token=${revertToken}`;
    expect(await mailsWithSubject(email, Subject.emailChanged)).toEqual([
      {
        from: "Notes API Test <sender@notes.test>",
        subject: Subject.emailChanged,
        text: changedNoticeText("n***@example.com", changedAt, link, revertToken),
      },
    ]);
    expect(await mailsWithSubject(newEmail, Subject.emailConfirmed)).toEqual([
      {
        from: "Notes API Test <sender@notes.test>",
        subject: Subject.emailConfirmed,
        text: confirmedNoticeText("u***@example.com", changedAt),
      },
    ]);
    expect(await mailsWithSubject(newEmail, Subject.emailChanged)).toEqual([]);
    expect(
      await count("SELECT count(*) AS n FROM one_time_codes WHERE purpose = 'change_email' AND user_id = ?", userId),
    ).toBe(0);

    // The code is used up, and the old address stays reserved for the account while its undo lives.
    expect(await textOf(await confirmEmailChange(current.token, code))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidConfirmationCode,
    });
    expect(await textOf(await quietRegister(email))).toEqual({ status: 409, type: TEXT, body: Contract.userExists });
  });

  it("answers 401, not 409, to a confirmation that lost the race to another with the same code (a double submit)", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const newEmail = randomEmail("new");
    const code = await emailChangeCode(email, token, newEmail);

    // The first confirmation has claimed its try and is about to switch when the second one arrives,
    // claims a try too and switches.
    const first = await holdRequest(/^update "users" set "email"/i, (db) =>
      callWithEnv({ DB: db }, "POST", "/auth/confirm-email-change", { token: code }, bearer(token)),
    );
    expect(await textOf(await confirmEmailChange(token, code))).toEqual({
      status: 200,
      type: TEXT,
      body: "Email changed.",
    });

    // The address is the caller's own now: no one else holds it, the code is simply used up.
    expect(await textOf(await first.release())).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidConfirmationCode,
    });
    expect(await jsonOf(await me(token))).toMatchObject({ status: 200, body: { email: newEmail } });
    expect(await mailsWithSubject(email, Subject.emailChanged)).toHaveLength(1);
  });

  it("retires a reset code mailed to the old address: it no longer resets the account", async () => {
    const email = await account();
    const { token } = await logIn(email);
    // Someone who reads the old mailbox asked for a reset code just before the owner moved away from it.
    const oldMailboxCode = await resetCode(email);
    const newEmail = randomEmail("new");
    expect((await confirmEmailChange(token, await emailChangeCode(email, token, newEmail))).status).toBe(200);

    expect(
      await textOf(await reset(newEmail, oldMailboxCode, "the old mailbox's password", lastRequestId(email))),
    ).toEqual({ status: 401, type: TEXT, body: AuthMessage.invalidResetCode });
    expect((await postLogin(newEmail)).status).toBe(200);
    expect((await me(token)).status).toBe(200);
  });

  it("answers 401 for a wrong code, and the address stays", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const newEmail = randomEmail("new");
    const code = await emailChangeCode(email, token, newEmail);
    expect(await textOf(await confirmEmailChange(token, otherCode(code)))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidConfirmationCode,
    });
    expect(await jsonOf(await me(token))).toMatchObject({ status: 200, body: { email } });
    expect(await storedUser(newEmail)).toBeNull();
    // A wrong try does not burn the code.
    expect((await confirmEmailChange(token, code)).status).toBe(200);
  });

  it("answers 401 without a pending change, and for an expired code", async () => {
    const email = await account();
    const { token } = await logIn(email);
    expect(await textOf(await confirmEmailChange(token, "123456"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidConfirmationCode,
    });

    const code = await emailChangeCode(email, token, randomEmail("new"));
    await setCode(email, { expires_at: Date.now() - 1 }, "change_email");
    expect(await textOf(await confirmEmailChange(token, code))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidConfirmationCode,
    });
    expect(await jsonOf(await me(token))).toMatchObject({ status: 200, body: { email } });
  });

  it("does not take another account's code", async () => {
    const mine = await account();
    const theirs = await account();
    const myToken = (await logIn(mine)).token;
    const theirToken = (await logIn(theirs)).token;
    const code = await emailChangeCode(theirs, theirToken, randomEmail("new"));
    expect(await textOf(await confirmEmailChange(myToken, code))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidConfirmationCode,
    });
    expect(await jsonOf(await me(myToken))).toMatchObject({ status: 200, body: { email: mine } });
  });

  it("answers 409 when the new address was registered in between, and the address stays", async () => {
    const email = await account();
    const current = await logIn(email);
    const other = await logIn(email);
    const newEmail = randomEmail("new");
    const code = await emailChangeCode(email, current.token, newEmail);
    expect((await quietRegister(newEmail, "someone else's password")).status).toBe(201);

    expect(await textOf(await confirmEmailChange(current.token, code))).toEqual({
      status: 409,
      type: TEXT,
      body: Contract.userExists,
    });
    expect(await jsonOf(await me(current.token))).toMatchObject({ status: 200, body: { email } });
    expect((await me(other.token)).status).toBe(200);
    expect((await postLogin(email)).status).toBe(200);
    expect(await mailsWithSubject(email, Subject.emailChanged)).toEqual([]);
  });

  it("answers 401 with WWW-Authenticate without a token", async () => {
    const response = await call("POST", "/auth/confirm-email-change", { token: "123456" });
    expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: AuthMessage.invalidAccessToken });
    expect(response.headers.get("www-authenticate")).toBe("Bearer");
  });

  it("answers 400 plain text for a missing or mistyped code", async () => {
    const { token } = await logIn(await account());
    for (const [body, message] of [
      [{}, "Token is required."],
      [{ token: "  " }, "Token is required."],
      [{ token: 123456 }, "Token must be a string."],
    ] as const) {
      expect(await textOf(await call("POST", "/auth/confirm-email-change", body, bearer(token)))).toEqual({
        status: 400,
        type: TEXT,
        body: message,
      });
    }
  });
});

describe("DELETE /auth/account", () => {
  /** The same app with NOTES_AUTH=required. */
  function privateNotes(method: string, path: string, token: string, body?: unknown): Promise<Response> {
    return callWithEnv({ NOTES_AUTH: "required" }, method, path, body, bearer(token));
  }

  it("deletes the account with its sessions, codes, login attempts and notes; every token dies at once; the address is free", async () => {
    const neighbour = await logIn(await account());
    const kept = (await (
      await privateNotes("POST", "/notes", neighbour.token, { title: "theirs", content: "c" })
    ).json()) as { id: number };
    const email = await account();
    const current = await logIn(email);
    const other = await logIn(email);
    const userId = (await storedUser(email))!.id;
    for (const title of ["mine 1", "mine 2"])
      expect((await privateNotes("POST", "/notes", current.token, { title, content: "c" })).status).toBe(201);
    await resetCode(email);
    expect((await postLogin(email, "wrong password")).status).toBe(401);

    const response = await deleteAccount(current.token);
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");

    expect(await storedUser(email)).toBeNull();
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", userId)).toBe(0);
    expect(await count("SELECT count(*) AS n FROM one_time_codes WHERE user_id = ?", userId)).toBe(0);
    expect(await count("SELECT count(*) AS n FROM notes WHERE user_id = ?", userId)).toBe(0);
    expect(await loginFailuresRow(email)).toBeNull();
    expect(await jsonOf(await privateNotes("GET", `/notes/${kept.id}`, neighbour.token))).toMatchObject({
      status: 200,
      body: { title: "theirs" },
    });

    await expectEnded(current);
    await expectEnded(other);
    expect((await privateNotes("GET", "/notes", current.token)).status).toBe(401);

    // The address registers again, and as the newest account it gets the old id back (see the schema):
    // the old tokens name a live user again, with a live session, and stay dead all the same.
    expect((await quietRegister(email)).status).toBe(201);
    expect((await storedUser(email))!.id).toBe(userId);
    expect((await call("POST", "/auth/verify-email", { email, token: (await storedCode(email))!.code })).status).toBe(
      200,
    );
    const again = await logIn(email);
    expect((await me(again.token)).status).toBe(200);
    await expectEnded(current);
    await expectEnded(other);
    expect(await jsonOf(await privateNotes("GET", "/notes", again.token))).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: [],
    });
  });

  it("answers 401, never a 500, to a login that checked the password just before the deletion", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const racing = await heldLogin(email);
    expect((await deleteAccount(token)).status).toBe(204);

    // The account it checked is gone: its session must not be written (nor fail on the foreign key).
    expect(await textOf(await racing.release())).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
    expect(await storedUser(email)).toBeNull();
  });

  it("answers 401 for a wrong password and deletes nothing", async () => {
    const email = await account();
    const { token } = await logIn(email);
    expect(await textOf(await deleteAccount(token, "not my password"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.wrongPassword,
    });
    expect(await storedUser(email)).not.toBeNull();
    expect((await me(token)).status).toBe(200);
  });

  it("deletes the account while the address's login is locked: the session proved the owner", async () => {
    const email = await account();
    const { token } = await logIn(email);
    await lockLogin(email);
    expect((await deleteAccount(token)).status).toBe(204);
    expect(await storedUser(email)).toBeNull();
  });

  it("answers 401 with WWW-Authenticate without a token, and for a token of an ended session", async () => {
    const { token } = await logIn(await account());
    await call("POST", "/auth/logout", undefined, bearer(token));
    for (const headers of [{}, bearer(token)]) {
      const response = await call("DELETE", "/auth/account", { password: PASSWORD }, headers);
      expect(await textOf(response)).toEqual({ status: 401, type: TEXT, body: AuthMessage.invalidAccessToken });
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
    }
  });

  it("answers 400 plain text for a missing or mistyped password, and deletes nothing", async () => {
    const email = await account();
    const { token } = await logIn(email);
    for (const [body, message] of [
      [{}, "Password is required."],
      [{ password: "" }, "Password is required."],
      [{ password: null }, "Password is required."],
      [{ password: 12345678 }, "Password must be a string."],
    ] as const) {
      expect(await textOf(await call("DELETE", "/auth/account", body, bearer(token)))).toEqual({
        status: 400,
        type: TEXT,
        body: message,
      });
    }
    expect(await storedUser(email)).not.toBeNull();
  });
});

describe("malformed bodies on the new endpoints", () => {
  const bodies: Array<[string, string, string]> = [
    ["non-JSON", "email=a@example.com", "Request body must be valid JSON."],
    ["truncated JSON", '{"email":', "Request body must be valid JSON."],
    ["an array", '["a@example.com"]', "Request body must be a JSON object."],
    ["null", "null", "Request body must be a JSON object."],
    ["a number", "42", "Request body must be a JSON object."],
    ["an empty body", "", "Request body must be a JSON object."],
  ];
  const endpoints: Array<[string, string, Record<string, unknown>, string]> = [
    ["POST", "/auth/forgot-password", { email: 1 }, "Email must be a string."],
    ["POST", "/auth/reset-password", { email: 1, token: 2, password: 3 }, "Email, token and password must be strings."],
    [
      "POST",
      "/auth/change-password",
      { current_password: 1, new_password: 2 },
      "Current and new password must be strings.",
    ],
    ["POST", "/auth/change-email", { password: 1, new_email: 2 }, "Password and new email must be strings."],
    ["POST", "/auth/confirm-email-change", { token: 123456 }, "Token must be a string."],
    ["DELETE", "/auth/account", { password: 1 }, "Password must be a string."],
  ];

  it.each(endpoints)(
    "%s %s answers 400 plain text for each, never a 500",
    async (method, path, numbers, numbersMessage) => {
      const email = await account();
      const { token } = await logIn(email);
      for (const [label, body, message] of bodies) {
        expect(await textOf(await call(method, path, body, bearer(token))), label).toEqual({
          status: 400,
          type: TEXT,
          body: message,
        });
      }
      expect(await textOf(await call(method, path, numbers, bearer(token)))).toEqual({
        status: 400,
        type: TEXT,
        body: numbersMessage,
      });
      expect((await me(token)).status).toBe(200);
    },
  );
});
