import { env } from "cloudflare:workers";
import { decodeJwt } from "jose";
import { expect } from "vitest";
import { AuthMessage } from "../../src/auth/messages";
import { DAY, MINUTE } from "../../src/lib/units";
import { JSON_TYPE, PASSWORD, TEXT, call, callWithEnv, holdRequest, jsonOf, randomEmail, textOf } from "./app";
import { CodePrefix, Subject, awaitMails, codeIn, mailedCode, mailsWithSubject } from "./mail";

/** POST /auth/login as a client sends it: the answer, whatever it is (logIn expects the 200 and returns its tokens). */
export function postLogin(email: string, password = PASSWORD): Promise<Response> {
  return call("POST", "/auth/login", { email, password });
}

export function verify(email: string, token: unknown): Promise<Response> {
  return call("POST", "/auth/verify-email", { email, token });
}

/** A six-digit code that is not `code`. */
export function otherCode(code: string): string {
  return code === "111111" ? "222222" : "111111";
}

export interface Tokens {
  token: string;
  refresh_token: string;
  expires_in: number;
}

/** Logs in (expecting 200) and returns the tokens. */
export async function logIn(
  email: string,
  { password = PASSWORD, userAgent }: { password?: string; userAgent?: string } = {},
): Promise<Tokens> {
  const response = await call("POST", "/auth/login", { email, password }, userAgent ? { "User-Agent": userAgent } : {});
  if (response.status !== 200) throw new Error(`login: expected 200, got ${response.status}`);
  return response.json();
}

export function bearer(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}` };
}

export function me(token: string): Promise<Response> {
  return call("GET", "/auth/me", undefined, bearer(token));
}

export function refresh(refreshToken: unknown): Promise<Response> {
  return call("POST", "/auth/refresh", { refresh_token: refreshToken });
}

export async function register(email: string, password = PASSWORD): Promise<Response> {
  return call("POST", "/auth/register", { email, password });
}

/** Registers and verifies an account through the API; returns its e-mail. */
export async function verifiedAccount(password = PASSWORD): Promise<string> {
  const email = randomEmail();
  expectStatus(await register(email, password), 201);
  expectStatus(await call("POST", "/auth/verify-email", { email, token: await mailedCode(email) }), 200);
  return email;
}

export interface StoredUser {
  id: number;
  email: string;
  password: string;
  isVerified: number;
  createdAt: number;
  lastMailAt: number;
  mailWindowStart: number;
  mailsInWindow: number;
  sign_in_epoch: number;
  password_changed_at: number;
  webauthn_handle: string | null;
}

/** The row as D1 holds it, read with plain SQL rather than through the app. */
export async function storedUser(email: string): Promise<StoredUser | null> {
  return env.DB.prepare("SELECT * FROM users WHERE email = ?").bind(email).first<StoredUser>();
}

export interface StoredCode {
  code: string;
  expires_at: number;
  attempts: number;
  window_start: number;
  window_attempts: number;
}

/** The account's one-time code of `purpose` as D1 holds it (null once used), read with plain SQL. */
export async function storedCode(email: string, purpose = "verify_email"): Promise<StoredCode | null> {
  return env.DB.prepare(
    "SELECT code, expires_at, attempts, window_start, window_attempts FROM one_time_codes WHERE purpose = ? AND user_id = (SELECT id FROM users WHERE email = ?)",
  )
    .bind(purpose, email)
    .first<StoredCode>();
}

/** Rewrites columns of one table's rows matching `where`, to move an account through time without waiting. */
async function rewrite(
  table: string,
  where: string,
  columns: Record<string, number | string | null>,
  params: unknown[],
): Promise<void> {
  const names = Object.keys(columns);
  const assignments = names.map((name) => `"${name}" = ?`).join(", ");
  await env.DB.prepare(`UPDATE ${table} SET ${assignments} WHERE ${where}`)
    .bind(...names.map((name) => columns[name]), ...params)
    .run();
}

export function setUser(email: string, columns: Record<string, number | string | null>): Promise<void> {
  return rewrite("users", "email = ?", columns, [email]);
}

export function setCode(
  email: string,
  columns: Record<string, number | string | null>,
  purpose = "verify_email",
): Promise<void> {
  return rewrite("one_time_codes", "purpose = ? AND user_id = (SELECT id FROM users WHERE email = ?)", columns, [
    purpose,
    email,
  ]);
}

export interface StoredSession {
  id: string;
  user_id: number;
  created_at: number;
  last_used_at: number;
  expires_at: number;
  generation: number;
  rotated_at: number;
  user_agent: string | null;
}

export function sessionIdOf(token: string): string {
  return decodeJwt(token).sid as string;
}

export async function storedSession(id: string): Promise<StoredSession | null> {
  return env.DB.prepare("SELECT * FROM sessions WHERE id = ?").bind(id).first<StoredSession>();
}

/** The request_id of the last forgot-password answer for each address (as the app normalizes it). */
export const lastRequestIds = new Map<string, string>();

/** Keeps the answer's request_id for reset() (read from a copy: the caller reads the answer itself). */
export async function keepRequestId(email: string, response: Response): Promise<Response> {
  const body: unknown = await response.clone().json();
  if (typeof body === "object" && body !== null && "request_id" in body && typeof body.request_id === "string") {
    lastRequestIds.set(email.trim().toLowerCase(), body.request_id);
  }
  return response;
}

/** The answer of forgot-password, the same for every address. */
export const ACCEPTED = {
  status: 200,
  type: JSON_TYPE,
  body: { message: AuthMessage.resetRequested, request_id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/) },
};

export async function forgot(email: string): Promise<Response> {
  return keepRequestId(email, await call("POST", "/auth/forgot-password", { email }));
}

/**
 * Registration with the mail account unset: the same account, allowance claimed included, without the
 * SMTP conversation (about 0.1 s a mail), for tests that read none of its mails.
 */
export function quietRegister(email: string, password = PASSWORD): Promise<Response> {
  return callWithEnv({ MAIL_EMAIL: " " }, "POST", "/auth/register", { email, password });
}

/** A verified account made without a mail (see quietRegister): the code is read from D1. */
export async function account(password = PASSWORD): Promise<string> {
  const email = randomEmail();
  expect((await quietRegister(email, password)).status).toBe(201);
  expect((await call("POST", "/auth/verify-email", { email, token: (await storedCode(email))!.code })).status).toBe(
    200,
  );
  return email;
}

/** The account's last mail moved back past the 60-second cooldown (the hourly cap still counts), reset mails' too. */
export async function pastCooldown(email: string): Promise<void> {
  await setUser(email, { lastMailAt: Date.now() - MINUTE });
  await env.DB.prepare("UPDATE reset_mail_allowances SET last_mail_at = ? WHERE email = ?")
    .bind(Date.now() - MINUTE, email)
    .run();
}

/** Asks for a reset code (past the cooldown) and returns the code from the newest reset mail. */
export async function resetCode(email: string): Promise<string> {
  const before = (await mailsWithSubject(email, Subject.reset)).length;
  await pastCooldown(email);
  expect(await jsonOf(await forgot(email))).toEqual(ACCEPTED);
  const mails = await awaitMails(email, Subject.reset, before + 1);
  expect(mails).toHaveLength(before + 1);
  return codeIn(mails.at(-1), CodePrefix.reset);
}

export const NEW_PASSWORD = "a brand new passphrase";

/** The notice of a changed or reset password of an account that has linked `providers` (none by default). */
export function passwordChangedText(providers: string[] = []): string {
  return [
    "Your password was changed and your other sessions were signed out. Your passkeys stay in place and still sign in: " +
      "remove any you do not recognise. If this was not you, reset your password now.",
    providers.length === 0
      ? "No sign-in provider is linked to your account."
      : `Sign-ins linked to your account, which sign in without the password: ${providers.join(", ")}. Unlink any you do not recognise (DELETE /auth/identities/{provider}).`,
  ].join("\n");
}

export const PASSWORD_CHANGED_TEXT = passwordChangedText();

export function lastRequestId(email: string): string {
  return lastRequestIds.get(email.trim().toLowerCase()) ?? "no-such-request";
}

/** A reset with the code of the address's last forgot-password request, unless another request is named. */
export function reset(
  email: string,
  token: string,
  password = NEW_PASSWORD,
  requestId = lastRequestId(email),
): Promise<Response> {
  return call("POST", "/auth/reset-password", { email, token, password, request_id: requestId });
}

export async function loginFailuresRow(email: string) {
  return env.DB.prepare("SELECT failures, lockedUntil FROM login_failures WHERE email = ?")
    .bind(email)
    .first<{ failures: number; lockedUntil: number }>();
}

/** Ten wrong logins: the address is locked, even for the right password. */
export async function lockLogin(email: string): Promise<void> {
  for (let i = 0; i < 10; i++) expect((await postLogin(email, "wrong password")).status).toBe(401);
  expect(await textOf(await postLogin(email))).toEqual({ status: 429, type: TEXT, body: AuthMessage.loginLocked });
}

/** Expects the 401 of a dead access token on /auth/me and of a dead refresh token on /auth/refresh. */
export async function expectEnded(tokens: Tokens): Promise<void> {
  expect(await textOf(await me(tokens.token))).toEqual({
    status: 401,
    type: TEXT,
    body: AuthMessage.invalidAccessToken,
  });
  expect(await textOf(await refresh(tokens.refresh_token))).toEqual({
    status: 401,
    type: TEXT,
    body: AuthMessage.invalidRefreshToken,
  });
}

/** A login stopped just before it creates its session: the password is checked, the session not yet written. */
export function heldLogin(email: string, password = PASSWORD) {
  return holdRequest(/^insert into "sessions"/i, (db) =>
    callWithEnv({ DB: db }, "POST", "/auth/login", { email, password }),
  );
}

export function changeEmail(token: string, newEmail: string, password = PASSWORD): Promise<Response> {
  return call("POST", "/auth/change-email", { password, new_email: newEmail }, bearer(token));
}

export function confirmEmailChange(token: string, code: string): Promise<Response> {
  return call("POST", "/auth/confirm-email-change", { token: code }, bearer(token));
}

/** Asks for an e-mail change (past the cooldown) and returns the code mailed to the new address. */
export async function emailChangeCode(email: string, token: string, newEmail: string): Promise<string> {
  await pastCooldown(email);
  expect(await textOf(await changeEmail(token, newEmail))).toEqual({
    status: 200,
    type: TEXT,
    body: AuthMessage.emailChangeSent,
  });
  const mails = await mailsWithSubject(newEmail, Subject.confirmNewEmail);
  expect(mails).toHaveLength(1);
  return codeIn(mails[0], CodePrefix.emailChange);
}

/** The revert token of the newest notice of an e-mail change mailed to `oldEmail`. */
export async function revertTokenMailed(oldEmail: string): Promise<string> {
  const notices = await mailsWithSubject(oldEmail, Subject.emailChanged);
  const token = /revert token: ([A-Za-z0-9_-]{22})$/m.exec(notices.at(-1)?.text ?? "")?.[1];
  if (!token) throw new Error(`no revert token mailed to ${oldEmail}`);
  return token;
}

// Social sign-in against the loopback providers (test/oauth/servers.ts).

function expectStatus(response: Response, status: number): void {
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}`);
}

/** When the newest change away from `oldEmail` was confirmed: its revert row's created_at, as D1 holds it. */
export async function changedAtOf(oldEmail: string): Promise<number> {
  const row = await env.DB.prepare(
    "SELECT created_at FROM email_change_reverts WHERE old_email = ? ORDER BY created_at DESC LIMIT 1",
  )
    .bind(oldEmail)
    .first<{ created_at: number }>();
  if (!row) throw new Error(`no e-mail change away from ${oldEmail}`);
  return row.created_at;
}

/** The moment an undo removes from, as the mails write it: EMAIL_CHANGE_LOOKBACK_MS (1 day) before the change. */
export function undoSince(changedAt: number): string {
  return new Date(changedAt - DAY).toUTCString();
}

/** The notice of an e-mail change mailed to the old address, with its undo link and token. */
export function changedNoticeText(masked: string, changedAt: number, link: string, token: string): string {
  const since = undoSince(changedAt);
  return [
    `The email address of your account was changed to ${masked}.`,
    `If this was not you, undo the change within 7 days: ${link}`,
    `An undo signs out every session, clears the password, and removes every passkey, second factor and linked sign-in added since ${since} or by the session that made the change. You then set a new password with forgot-password.`,
    `Once the account signs in with a passkey or an authenticator app it had before ${since}, the undo works for a day more at most.`,
    `Apps undo it with POST /auth/revert-email-change and this revert token: ${token}`,
  ].join("\n");
}

/** The confirmation mailed to the new address of a change: what an undo by the old address would take (N8). */
export function confirmedNoticeText(maskedOld: string, changedAt: number): string {
  const since = undoSince(changedAt);
  return [
    `This is now the email address of your account. For 7 days the old address (${maskedOld}) can undo the change with the link mailed to it.`,
    `An undo signs out every session, clears the password, and removes every passkey, second factor and linked sign-in added since ${since} or by the session that made the change.`,
    "That includes any you add now: a change made with a stolen password looks the same as yours, and the undo sides with the old address.",
    `If the change was yours, sign in once with a passkey or an authenticator app you had before ${since}: the old address then has a day left at most.`,
  ].join("\n");
}
