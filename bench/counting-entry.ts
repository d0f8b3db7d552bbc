/**
 * Bench-only entry module: our worker (`../src/index.ts`, unchanged) with its D1 binding wrapped so
 * every round trip to D1 is counted, plus a few probes under `/__bench/`. Bundled by wrangler exactly
 * like the real worker (`wrangler deploy bench/counting-entry.ts --dry-run`); never deployed.
 *
 * Round trips: `first`, `all`, `run` and `raw` on a statement, and `batch` and `exec` on the database
 * (or on a session from `withSession`), each count as one.
 *
 * - Every response carries `X-Bench-D1-Queries`: the round trips made while the request was handled,
 *   up to the moment the response was returned.
 * - `GET /__bench/d1-stats` returns the running totals `{ requests, queries, late, rowsWritten }`; `late` counts
 *   round trips made after the response was returned (a streamed body, `waitUntil`), which the header
 *   cannot show; they are attributed to the last request, which is right when requests come one by one. The runner takes the difference of the totals around its requests. `last` lists the
 *   round trips of the most recent request (method and SQL), the evidence behind a count, and
 *   `slowestMs` the longest of them (from the call to its answer, as the Worker waits for it).
 * - `POST /__bench/bcrypt` `{ op: "hash" | "compare", n, cost?, password, hash? }` runs bcryptjs `n`
 *   times in a row (the runner times it from Node: inside workerd the clock stands still while
 *   JavaScript runs).
 *
 * The per-request counter travels in an AsyncLocalStorage, so the app always sees the same env
 * object with the same (wrapped) DB binding, as it would in production.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import bcrypt from "bcryptjs";
import worker from "../src/index.ts";

interface Counter {
  queries: number;
  /** Set once the response has been handed back; later round trips are "late". */
  done: boolean;
  /** What each round trip was: `all: SELECT ...`, `batch: 2 statements: ...`. */
  statements: string[];
}

/** `rowsWritten`: D1's `meta.rows_written` summed over every answer that reports it (see `countRowsWritten`). */
const totals = { requests: 0, queries: 0, late: 0, rowsWritten: 0 };
/** The round trips of the most recent request (later ones are appended as they happen). */
let lastStatements: string[] = [];
/** The longest round trip of the most recent request, in milliseconds. */
let lastSlowestMs = 0;
const current = new AsyncLocalStorage<Counter>();
const SQL = Symbol("sql");

/** Counts one round trip and times it: the clock moves while the Worker waits for D1. */
function roundTrip(what: string, run: () => unknown): unknown {
  countRoundTrip(what);
  const started = Date.now();
  const result = run();
  if (!(result instanceof Promise)) return result;
  return result
    .then((answer: unknown) => {
      countRowsWritten(answer);
      return answer;
    })
    .finally(() => {
      lastSlowestMs = Math.max(lastSlowestMs, Date.now() - started);
    });
}

/**
 * Adds the rows D1 says a round trip wrote (index entries included): `all`, `run` and each statement of a
 * `batch` answer with their `meta`; `first` and `raw` answer rows only, so their writes go uncounted.
 */
function countRowsWritten(answer: unknown): void {
  for (const result of Array.isArray(answer) ? answer : [answer]) {
    const written = (result as { meta?: { rows_written?: unknown } } | null)?.meta?.rows_written;
    if (typeof written === "number") totals.rowsWritten += written;
  }
}

function countRoundTrip(what: string): void {
  totals.queries++;
  const counter = current.getStore();
  if (counter && !counter.done) {
    counter.queries++;
    counter.statements.push(what);
    return;
  }
  // After the response was returned: a body stream's pull (which the runtime calls outside the
  // request's async context, so without a counter) or a waitUntil. The runner sends its counted
  // requests one at a time, so these belong to the request it last sent.
  totals.late++;
  lastStatements.push(`(after the answer) ${what}`);
}

const sqlOf = (statement: unknown): string =>
  String((statement as { [SQL]?: string } | undefined)?.[SQL] ?? "?").replace(/\s+/g, " ").slice(0, 300);

/** Proxies hand the real objects to D1's own methods (batch needs real statements, not proxies). */
const unwrapped = new WeakMap<object, object>();
const unwrap = <T,>(value: T): T =>
  (typeof value === "object" && value !== null ? (unwrapped.get(value) as T | undefined) : undefined) ?? value;

const STATEMENT_ROUND_TRIPS = new Set(["first", "all", "run", "raw"]);
const DATABASE_ROUND_TRIPS = new Set(["batch", "exec"]);

type AnyFunction = (...args: unknown[]) => unknown;

function wrap<T extends object>(target: T, wrapMember: (name: string, method: AnyFunction) => AnyFunction, sql?: string): T {
  const proxy = new Proxy(target, {
    get(obj, prop) {
      if (prop === SQL) return sql;
      const value = Reflect.get(obj, prop, obj) as unknown;
      if (typeof value !== "function" || typeof prop !== "string") return value;
      return wrapMember(prop, (value as AnyFunction).bind(obj));
    },
  });
  unwrapped.set(proxy, target);
  return proxy;
}

function wrapStatement(statement: object, sql: string): object {
  return wrap(
    statement,
    (name, method) => {
      if (name === "bind") return (...args: unknown[]) => wrapStatement(method(...args) as object, sql);
      if (STATEMENT_ROUND_TRIPS.has(name)) {
        return (...args: unknown[]) => roundTrip(`${name}: ${sql.replace(/\s+/g, " ").slice(0, 300)}`, () => method(...args));
      }
      return method;
    },
    sql,
  );
}

/** A D1Database or a D1DatabaseSession: `prepare` gives counted statements, `batch`/`exec` count once. */
function wrapDatabase<T extends object>(db: T): T {
  return wrap(db, (name, method) => {
    if (name === "prepare") return (...args: unknown[]) => wrapStatement(method(...args) as object, String(args[0]));
    if (name === "withSession") return (...args: unknown[]) => wrapDatabase(method(...args) as object);
    if (DATABASE_ROUND_TRIPS.has(name)) {
      return (...args: unknown[]) => {
        const [first, ...rest] = args;
        return roundTrip(
          Array.isArray(first)
            ? `batch: ${first.length} statements: ${first.map(sqlOf).join(" ; ")}`
            : `${name}: ${String(first).replace(/\s+/g, " ").slice(0, 300)}`,
          () => method(Array.isArray(first) ? first.map(unwrap) : first, ...rest),
        );
      };
    }
    return method;
  });
}

type FetchHandler = (request: Request, env: unknown, ctx: ExecutionContext) => Response | Promise<Response>;
const appFetch: FetchHandler = (worker as unknown as { fetch: FetchHandler }).fetch.bind(worker);

/** One wrapped env per real env object, so the app sees a stable env identity across requests. */
const wrappedEnvs = new WeakMap<object, object>();
function countingEnv(env: Record<string, unknown>): object {
  let wrapped = wrappedEnvs.get(env);
  if (!wrapped) {
    wrapped = { ...env, DB: wrapDatabase(env.DB as object) };
    wrappedEnvs.set(env, wrapped);
  }
  return wrapped;
}

interface BcryptProbe {
  op?: unknown;
  n?: unknown;
  cost?: unknown;
  password?: unknown;
  hash?: unknown;
}

async function bcryptProbe(request: Request): Promise<Response> {
  const body = await request.json<BcryptProbe>();
  const n = typeof body.n === "number" && Number.isInteger(body.n) && body.n >= 0 ? body.n : 1;
  const password = typeof body.password === "string" ? body.password : "bench password";
  let matches = 0;
  if (body.op === "hash") {
    const cost = typeof body.cost === "number" ? body.cost : 10;
    for (let i = 0; i < n; i++) if ((await bcrypt.hash(password, cost)).length > 0) matches++;
  } else if (body.op === "compare" && typeof body.hash === "string") {
    for (let i = 0; i < n; i++) if (await bcrypt.compare(password, body.hash)) matches++;
  } else {
    return new Response("op must be hash, or compare with a hash", { status: 400 });
  }
  return Response.json({ n, matches });
}

export default {
  async fetch(request: Request, env: Record<string, unknown>, ctx: ExecutionContext): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname === "/__bench/d1-stats") return Response.json({ ...totals, last: lastStatements, slowestMs: lastSlowestMs });
    if (pathname === "/__bench/bcrypt" && request.method === "POST") return bcryptProbe(request);

    const counter: Counter = { queries: 0, done: false, statements: [] };
    totals.requests++;
    lastSlowestMs = 0;
    const response = await current.run(counter, () => appFetch(request, countingEnv(env), ctx));
    counter.done = true;
    lastStatements = counter.statements;
    const headers = new Headers(response.headers);
    headers.set("X-Bench-D1-Queries", String(counter.queries));
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  },
} satisfies ExportedHandler<Record<string, unknown>>;
