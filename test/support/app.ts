import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { vi } from "vitest";
import worker from "../../src/index";
import type { Bindings } from "../../src/types";

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

let clients = 0;

/**
 * The CF-Connecting-IP header of a client no request of this runtime has come from yet (an IPv4 address of the
 * benchmarking range, 198.18.0.0/15): for tests of what the whole deployment shares, which one client's share of it
 * (BUDGET_SHARES) would otherwise meet first.
 */
export function anotherClient(): Record<string, string> {
  clients += 1;
  return { "CF-Connecting-IP": `198.${18 + (clients >> 16)}.${(clients >> 8) & 255}.${clients & 255}` };
}

/** A `fetch` for a client (such as `hc<AppType>`) of the app with some bindings replaced, as callWithEnv sends. */
export function fetchWithEnv(overrides: Overrides) {
  return async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const ctx = createExecutionContext();
    const response = await worker.fetch(new Request(input, init), { ...env, ...overrides } as Bindings, ctx);
    await waitOnExecutionContext(ctx);
    return response;
  };
}

/** How many answers of a burst had each status. */
export function tally(responses: Response[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const { status } of responses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
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

export async function count(sql: string, ...params: unknown[]): Promise<number> {
  return (await env.DB.prepare(sql)
    .bind(...params)
    .first<number>("n"))!;
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

/** Resolves with `promise`'s value, or with "timeout" after `ms`. */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | "timeout"> {
  return Promise.race([promise, new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), ms))]);
}
