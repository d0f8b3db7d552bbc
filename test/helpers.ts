import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { decodeJwt } from "jose";
import PostalMime from "postal-mime";
import * as v from "valibot";
import { expect, vi } from "vitest";
import { AuthMessage } from "../src/auth/messages";
import worker from "../src/index";
import { MINUTE } from "../src/lib/units";
import type { Bindings } from "../src/types";
import type { GitHubScript, SignInScript } from "./oauth/types";
import type { ReceivedMail, SmtpPeer } from "./smtp/types";

export const BASE = "http://api.test";
export const PASSWORD = "correct horse battery";

/** A fresh address per call, so tests never share accounts. */
export function randomEmail(prefix = "user"): string {
  return `${prefix}-${crypto.randomUUID()}@example.com`;
}

function buildRequest(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Request {
  // A redirect is an answer to assert, never followed: the app's fetch would send the next request to the app itself.
  const init: RequestInit & { headers: Record<string, string> } = {
    method,
    headers: { ...headers },
    redirect: "manual",
  };
  if (body !== undefined) {
    // A string or raw bytes go as they are; anything else as its JSON.
    init.body = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
    init.headers["Content-Type"] ??= "application/json";
  }
  return new Request(`${BASE}${path}`, init);
}

/** A request through the deployed app's own fetch handler, as a client would send it. */
export function call(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return exports.default.fetch(buildRequest(method, path, body, headers));
}

/**
 * Fires the worker's cron trigger through the runtime, as Cloudflare does: a scheduled event dispatched to
 * the main module. Fetcher.scheduled() exists at run time but is not in the generated types.
 */
export async function fireCron(cron = "17 * * * *", scheduledTime = new Date()): Promise<void> {
  const main = exports.default as unknown as {
    scheduled(options: { cron: string; scheduledTime: Date }): Promise<unknown>;
  };
  await main.scheduled({ cron, scheduledTime });
}

/** Bindings to replace: declared ones, and the social sign-in settings whose names are made from a provider's. */
export type Overrides = Partial<Bindings> & { [name: `OAUTH_${string}`]: string };

/**
 * The same app with some bindings replaced (another SMTP peer, a missing secret, a broken database), as
 * soon as it answers: `settled` is the work the request left to waitUntil (mail sent after the answer).
 */
export async function callLeavingWork(
  overrides: Overrides,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ response: Response; settled: Promise<void> }> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    buildRequest(method, path, body, headers),
    { ...env, ...overrides } as Bindings,
    ctx,
  );
  return { response, settled: waitOnExecutionContext(ctx) };
}

/** callLeavingWork, answering once the work left to waitUntil is done too. */
export async function callWithEnv(
  overrides: Overrides,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  const { response, settled } = await callLeavingWork(overrides, method, path, body, headers);
  await settled;
  return response;
}

export function smtpPort(peer: SmtpPeer): string {
  return String(env.SMTP.ports[peer]);
}

export async function mailsTo(address: string): Promise<ReceivedMail[]> {
  const response = await fetch(`${env.SMTP.inspectUrl}/messages?to=${encodeURIComponent(address)}`);
  return response.json();
}

export async function smtpConnections(): Promise<Partial<Record<SmtpPeer, number>>> {
  const response = await fetch(`${env.SMTP.inspectUrl}/connections`);
  return response.json();
}

/** Every command line `peer` (an smtp-server peer) has received, in order. */
export async function smtpCommands(peer: SmtpPeer): Promise<string[]> {
  const response = await fetch(`${env.SMTP.inspectUrl}/commands?peer=${peer}`);
  return response.json();
}

/** The code from the one verification e-mail sent to `address`. */
export async function mailedCode(address: string): Promise<string> {
  const codes = await codesMailed(address, CodePrefix.verification);
  if (codes.length !== 1) throw new Error(`expected one verification mail to ${address}, found ${codes.length}`);
  return codes[0]!;
}

export function login(email: string, password = PASSWORD): Promise<Response> {
  return call("POST", "/auth/login", { email, password });
}

export function verify(email: string, token: unknown): Promise<Response> {
  return call("POST", "/auth/verify-email", { email, token });
}

/** A six-digit code that is not `code`. */
export function otherCode(code: string): string {
  return code === "111111" ? "222222" : "111111";
}

/** How many answers of a burst had each status. */
export function tally(responses: Response[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const { status } of responses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
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

function expectStatus(response: Response, status: number): void {
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}`);
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

/** Asserts a plain-text response: status, exact body and content type. */
export async function textOf(response: Response): Promise<{ status: number; type: string | null; body: string }> {
  return { status: response.status, type: response.headers.get("content-type"), body: await response.text() };
}

export async function jsonOf(response: Response): Promise<{ status: number; type: string | null; body: unknown }> {
  return { status: response.status, type: response.headers.get("content-type"), body: await response.json() };
}

export const TEXT = "text/plain; charset=UTF-8";
export const JSON_TYPE = "application/json";

/**
 * The app's log lines (one JSON object each) written while the test runs, parsed, instead of printed.
 * Pair with `vi.restoreAllMocks()` in an `afterEach`.
 */
export function captureLogs(): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  for (const method of ["log", "warn", "error"] as const) {
    vi.spyOn(console, method).mockImplementation((line: unknown) => {
      lines.push(JSON.parse(String(line)) as Record<string, unknown>);
    });
  }
  return lines;
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

export const Subject = {
  reset: "Reset Your Password",
  passwordChanged: "Your Password Was Changed",
  confirmNewEmail: "Confirm Your New Email Address",
  emailChanged: "Your Email Address Was Changed",
} as const;

export interface ParsedMail {
  from: string | undefined;
  subject: string;
  text: string;
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

/** A received message as a test reads it: sender, subject and trimmed text. */
export async function parseMail(raw: string): Promise<ParsedMail> {
  const message = await PostalMime.parse(raw);
  const from = message.from ? `${message.from.name} <${message.from.address}>` : undefined;
  return { from, subject: message.subject ?? "", text: (message.text ?? "").trim() };
}

/** Every mail sent to `address` with `subject`, oldest first, parsed. */
export async function mailsWithSubject(address: string, subject: string): Promise<ParsedMail[]> {
  const parsed = await Promise.all((await mailsTo(address)).map((mail) => parseMail(mail.raw)));
  return parsed.filter((mail) => mail.subject === subject);
}

/** The text before the code in each kind of mail that carries one. */
export const CodePrefix = {
  verification: "Your verification code is: ",
  reset: "Your password reset code is: ",
  emailChange: "Your email change confirmation code is: ",
} as const;

/** The 6-digit code of a text whose first line is `<prefix><code>`, if it is one. */
function codeAfter(prefix: string, text: string): string | undefined {
  const line = text.split("\n")[0]!;
  return line.startsWith(prefix) && /^\d{6}$/.test(line.slice(prefix.length)) ? line.slice(prefix.length) : undefined;
}

/** The request id a reset mail carries beside its code. */
export function requestIdIn(mail: ParsedMail | undefined): string {
  const id = /^Its request id is: ([A-Za-z0-9_-]{22})$/m.exec(mail?.text ?? "")?.[1];
  if (!id) throw new Error(`no request id in mail: ${mail?.text}`);
  return id;
}

/** The codes of every mail to `address` whose text is `<prefix><code>`, oldest first. */
export async function codesMailed(address: string, prefix: string): Promise<string[]> {
  const texts = await Promise.all((await mailsTo(address)).map(async (mail) => (await parseMail(mail.raw)).text));
  return texts.map((text) => codeAfter(prefix, text)).filter((code) => code !== undefined);
}

/** Waits (up to 2 s) until `address` has `count` mails with `subject`: forgot-password mails after answering. */
export async function awaitMails(address: string, subject: string, count = 1): Promise<ParsedMail[]> {
  const deadline = Date.now() + 2_000;
  for (;;) {
    const mails = await mailsWithSubject(address, subject);
    if (mails.length >= count || Date.now() > deadline) return mails;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The 6-digit code of a mail whose text is `<prefix><code>`. */
export function codeIn(mail: ParsedMail | undefined, prefix: string): string {
  const code = codeAfter(prefix, mail?.text ?? "");
  if (!code) throw new Error(`no code in mail: ${mail?.text}`);
  return code;
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

export async function count(sql: string, ...params: unknown[]): Promise<number> {
  return (await env.DB.prepare(sql)
    .bind(...params)
    .first<number>("n"))!;
}

export const NEW_PASSWORD = "a brand new passphrase";

export const PASSWORD_CHANGED_TEXT =
  "Your password was changed and your other sessions were signed out. Your passkeys stay in place and still sign in: " +
  "remove any you do not recognise. If this was not you, reset your password now.";

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
  for (let i = 0; i < 10; i++) expect((await login(email, "wrong password")).status).toBe(401);
  expect(await textOf(await login(email))).toEqual({ status: 429, type: TEXT, body: AuthMessage.loginLocked });
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

/**
 * Sends a request whose database is env.DB, except that its first batch with a statement matching
 * `pattern` waits: the request is stopped between its checks and its writes while the test sends
 * others, so that an interleaving an attacker can provoke is pinned deterministically. `release` lets
 * the batch go and answers the held request's response.
 */
export async function holdRequest(
  pattern: RegExp,
  send: (db: D1Database) => Promise<Response>,
): Promise<{ release: () => Promise<Response> }> {
  let release!: () => void;
  let reached!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const held = new Promise<void>((resolve) => (reached = resolve));
  const sqlOf = new WeakMap<D1PreparedStatement, string>();
  let armed = true;
  const db = {
    prepare(query: string) {
      const statement = env.DB.prepare(query);
      return {
        bind(...values: unknown[]) {
          const bound = statement.bind(...values);
          sqlOf.set(bound, query);
          return bound;
        },
        all: () => statement.all(),
        raw: () => statement.raw(),
        run: () => statement.run(),
        first: () => statement.first(),
      };
    },
    async batch(statements: D1PreparedStatement[]) {
      if (armed && statements.some((statement) => pattern.test(sqlOf.get(statement) ?? ""))) {
        armed = false;
        reached();
        await gate;
      }
      return env.DB.batch(statements);
    },
    // The app reads and writes through a D1 session of the binding (read replication): this one.
    withSession() {
      return {
        prepare: (query: string) => db.prepare(query),
        batch: (statements: D1PreparedStatement[]) => db.batch(statements),
        getBookmark: () => null,
      };
    },
  };
  const response = send(db as unknown as D1Database);
  await Promise.race([
    held,
    response.then(() => {
      throw new Error(`the request answered without a batch matching ${pattern}`);
    }),
  ]);
  return {
    release: () => {
      release();
      return response;
    },
  };
}

/** A login stopped just before it creates its session: the password is checked, the session not yet written. */
export function heldLogin(email: string, password = PASSWORD) {
  return holdRequest(/^insert into "sessions"/i, (db) =>
    callWithEnv({ DB: db }, "POST", "/auth/login", { email, password }),
  );
}

export const Note = v.object({ id: v.number(), title: v.string(), content: v.string(), created_at: v.string() });

export const error = (status: number, message: string) => ({ status, type: JSON_TYPE, body: { error: message } });

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

/** The app URLs of OAUTH_REDIRECT_URLS in vitest.config.ts. */
export const APP_REDIRECT = "https://app.example/oauth/done";
export const NATIVE_REDIRECT = "com.example.app:/oauth";

export type OpenIdName = "google" | "apple";

/** An app's PKCE pair: a random verifier and its S256 challenge. */
export async function pkcePair(): Promise<{ verifier: string; challenge: string }> {
  const verifier = base64urlOf(crypto.getRandomValues(new Uint8Array(32)));
  return {
    verifier,
    challenge: base64urlOf(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)))),
  };
}

function base64urlOf(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/** GET /auth/oauth/{provider}/authorize with the app's parameters (any left undefined is left out). */
export function authorize(provider: string, params: Record<string, string | undefined>): Promise<Response> {
  const query = new URLSearchParams(
    Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  return call("GET", `/auth/oauth/${provider}/authorize?${query.toString()}`);
}

export function locationOf(response: Response): URL {
  const location = response.headers.get("location");
  if (!location) throw new Error(`no Location in a ${response.status}`);
  return new URL(location);
}

/** Scripts what an OpenID peer does for the sign-in whose authorize redirect carried `nonce`. */
export async function scriptSignIn(provider: OpenIdName, script: SignInScript): Promise<void> {
  const response = await fetch(`${env.OAUTH[provider].issuer}/_test/script`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(script),
  });
  expect(response.status).toBe(200);
}

/** Scripts the fake GitHub for the sign-in whose authorize redirect carried `state`. */
export async function scriptGitHub(script: GitHubScript): Promise<void> {
  const response = await fetch(`${env.OAUTH.github.url}/_test/script`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(script),
  });
  expect(response.status).toBe(200);
}

/** What the browser does at the provider: follows the authorize URL, and answers where the provider sends it back. */
export async function atProvider(authorizeUrl: URL): Promise<URL> {
  const response = await fetch(authorizeUrl, { redirect: "manual" });
  expect(response.status).toBe(302);
  return locationOf(response);
}

/** The provider's redirect back to the service, through the app. */
export function callback(url: URL): Promise<Response> {
  expect(url.origin).toBe(BASE);
  return call("GET", `${url.pathname}${url.search}`);
}

/** A fresh identity's claims: a random subject and address, vouched for. */
export function identityClaims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { sub: `sub-${crypto.randomUUID()}`, email: randomEmail("social"), email_verified: true, ...overrides };
}

export interface WebSignIn {
  /** Where the service sent the browser back to the app. */
  app: URL;
  verifier: string;
}

/**
 * A whole web sign-in with an OpenID peer up to the app's redirect, the peer scripted with `script` (its
 * nonce filled in): authorize, the provider, the callback.
 */
export async function webSignIn(
  provider: OpenIdName,
  script: Omit<SignInScript, "nonce">,
  { redirectUri = APP_REDIRECT, state = "app-state" }: { redirectUri?: string; state?: string | null } = {},
): Promise<WebSignIn> {
  const { verifier, challenge } = await pkcePair();
  const started = await authorize(provider, {
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: state ?? undefined,
  });
  expect(started.status).toBe(302);
  const toProvider = locationOf(started);
  await scriptSignIn(provider, { ...script, nonce: toProvider.searchParams.get("nonce")! });
  const back = await callback(await atProvider(toProvider));
  expect(back.status).toBe(302);
  return { app: locationOf(back), verifier };
}

export function exchangeLoginCode(code: unknown, verifier: unknown): Promise<Response> {
  return call("POST", "/auth/oauth/token", { code, code_verifier: verifier });
}

/** A web sign-in with `claims` through to the tokens (expecting 200). */
export async function socialLogIn(provider: OpenIdName, claims: Record<string, unknown>): Promise<Tokens> {
  const { app, verifier } = await webSignIn(provider, { claims });
  const response = await exchangeLoginCode(app.searchParams.get("code"), verifier);
  if (response.status !== 200)
    throw new Error(`oauth token: expected 200, got ${response.status}: ${await response.text()}`);
  return response.json();
}

/** An id_token the OpenID peer signs with `claims` (its own key, or a foreign one under the same key id). */
export async function signedIdToken(
  provider: OpenIdName,
  claims: Record<string, unknown>,
  options: { expiresIn?: number; foreignKey?: boolean } = {},
): Promise<string> {
  const response = await fetch(`${env.OAUTH[provider].issuer}/_test/sign`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ claims, ...options }),
  });
  return ((await response.json()) as { id_token: string }).id_token;
}

export function idTokenSignIn(provider: string, body: Record<string, unknown>): Promise<Response> {
  return call("POST", `/auth/oauth/${provider}/id-token`, body);
}

/** The token endpoint request the OpenID peer received for the sign-in of `nonce` (its form fields). */
export async function tokenRequestOf(provider: OpenIdName, nonce: string): Promise<Record<string, string> | null> {
  const response = await fetch(`${env.OAUTH[provider].issuer}/_test/token-request?nonce=${encodeURIComponent(nonce)}`);
  return response.json();
}

/** The settings of live updates: they need private notes (the suite's worker has public ones, as the contract says). */
export const PRIVATE_NOTES: Partial<Bindings> = { NOTES_AUTH: "required" };

/** A ticket for the live-updates socket, asked for with the access token `token` (expecting 201). */
export async function liveTicket(token: string, overrides: Partial<Bindings> = {}): Promise<string> {
  const response = await callWithEnv(
    { ...PRIVATE_NOTES, ...overrides },
    "POST",
    "/changes/live-ticket",
    undefined,
    bearer(token),
  );
  if (response.status !== 201)
    throw new Error(`live-ticket: expected 201, got ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { ticket: string }).ticket;
}

/**
 * GET /changes/live with the ticket, as a WebSocket client sends it (Upgrade: websocket, unless `headers` says
 * otherwise).
 */
export function upgrade(
  ticket: string,
  headers: Record<string, string> = {},
  overrides: Partial<Bindings> = {},
): Promise<Response> {
  return callWithEnv(
    { ...PRIVATE_NOTES, ...overrides },
    "GET",
    `/changes/live?ticket=${encodeURIComponent(ticket)}`,
    undefined,
    { Upgrade: "websocket", ...headers },
  );
}

/** A live-updates socket as its client sees it: the frames so far, and how it closed. */
export interface LiveSocket {
  socket: WebSocket;
  /** Every text frame received so far, in order. */
  frames: string[];
  /** The close code and reason once the socket has closed, and when (Date.now()). */
  closed: Promise<{ code: number; reason: string; at: number }>;
  /** Waits up to `ms` for frame number `index` (0 is `ready`): the frame, or undefined if none came. */
  frame(index: number, ms?: number): Promise<string | undefined>;
}

/** Accepts the socket of a 101 and records what it receives. */
export function acceptLive(response: Response): LiveSocket {
  const socket = response.webSocket;
  if (response.status !== 101 || !socket) throw new Error(`expected 101 with a WebSocket, got ${response.status}`);
  const frames: string[] = [];
  const closed = new Promise<{ code: number; reason: string; at: number }>((resolve) => {
    socket.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason, at: Date.now() }));
  });
  socket.addEventListener("message", (event) => {
    frames.push(typeof event.data === "string" ? event.data : "(binary)");
  });
  socket.accept();
  const frame = async (index: number, ms = 2_000) => {
    const deadline = Date.now() + ms;
    while (frames.length <= index && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    return frames[index];
  };
  return { socket, frames, closed, frame };
}

/** Opens a live-updates socket for the session of `token` and waits for its `ready`. */
export async function openLive(token: string): Promise<LiveSocket> {
  const live = acceptLive(await upgrade(await liveTicket(token)));
  expect(await live.frame(0)).toBe('{"type":"ready"}');
  return live;
}

/** Resolves with `promise`'s value, or with "timeout" after `ms`. */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | "timeout"> {
  return Promise.race([promise, new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), ms))]);
}
