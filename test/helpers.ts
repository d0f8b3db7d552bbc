import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { vi } from "vitest";
import PostalMime from "postal-mime";
import worker from "../src/index";
import type { Bindings } from "../src/types";
import type { ReceivedMail, SmtpPeer } from "./smtp/types";

export const BASE = "http://api.test";
export const PASSWORD = "correct horse battery";

/** A fresh address per call, so tests never share accounts. */
export function randomEmail(prefix = "user"): string {
  return `${prefix}-${crypto.randomUUID()}@example.com`;
}

function buildRequest(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Request {
  const init: RequestInit & { headers: Record<string, string> } = { method, headers: { ...headers } };
  if (body !== undefined) {
    // A string or raw bytes go as they are; anything else as its JSON.
    init.body = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
    init.headers["Content-Type"] ??= "application/json";
  }
  return new Request(`${BASE}${path}`, init);
}

/** A request through the deployed app's own fetch handler, as a client would send it. */
export function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return exports.default.fetch(buildRequest(method, path, body, headers));
}

/**
 * Fires the worker's cron trigger through the runtime, as Cloudflare does: a scheduled event dispatched to
 * the main module. Fetcher.scheduled() exists at run time but is not in the generated types.
 */
export async function fireCron(cron = "17 * * * *", scheduledTime = new Date()): Promise<void> {
  const main = exports.default as unknown as { scheduled(options: { cron: string; scheduledTime: Date }): Promise<unknown> };
  await main.scheduled({ cron, scheduledTime });
}

/** The same app with some bindings replaced: another SMTP peer, a missing secret, a broken database. */
export async function callWithEnv(
  overrides: Partial<Bindings>,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(buildRequest(method, path, body, headers), { ...env, ...overrides } as Bindings, ctx);
  await waitOnExecutionContext(ctx);
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
  const mails = await mailsTo(address);
  if (mails.length !== 1) throw new Error(`expected one mail to ${address}, found ${mails.length}`);
  const parsed = await PostalMime.parse(mails[0]!.raw);
  const match = /^Your verification code is: (\d{6})$/.exec(parsed.text?.trim() ?? "");
  if (!match) throw new Error(`no code in mail to ${address}: ${parsed.text}`);
  return match[1]!;
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
export async function logIn(email: string, { password = PASSWORD, userAgent }: { password?: string; userAgent?: string } = {}): Promise<Tokens> {
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
async function rewrite(table: string, where: string, columns: Record<string, number | string | null>, params: unknown[]): Promise<void> {
  const names = Object.keys(columns);
  const assignments = names.map((name) => `"${name}" = ?`).join(", ");
  await env.DB.prepare(`UPDATE ${table} SET ${assignments} WHERE ${where}`)
    .bind(...names.map((name) => columns[name]), ...params)
    .run();
}

export function setUser(email: string, columns: Record<string, number | string | null>): Promise<void> {
  return rewrite("users", "email = ?", columns, [email]);
}

export function setCode(email: string, columns: Record<string, number | string | null>, purpose = "verify_email"): Promise<void> {
  return rewrite("one_time_codes", "purpose = ? AND user_id = (SELECT id FROM users WHERE email = ?)", columns, [purpose, email]);
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
