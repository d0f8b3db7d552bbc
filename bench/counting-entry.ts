/**
 * Bench-only entry: our worker (the default export of `../src/index.ts`, unchanged) with its D1 binding
 * wrapped so that every round trip is counted (`first`, `all`, `run`, `raw` on a statement; `batch`, `exec`
 * on the database or a session), and a bcrypt probe. Bundled by wrangler like the real worker; never deployed.
 *
 * - Every response carries `X-Bench-D1-Queries`: the round trips made before the response was returned.
 * - `GET /__bench/d1-stats`: the running totals `{ requests, queries, late, hubRequests }`, `late` the round
 *   trips made after a response was returned (a streamed list's later chunks), `hubRequests` the requests to
 *   the live-updates hubs (a call of a Durable Object stub's method, `fetch` included), whenever made.
 * - A request with `X-Bench-Hub: off` sees a LIVE_HUB whose hubs do nothing and cost no Durable Object
 *   request: the write path as it was before live updates, for the cost they add.
 * - `POST /__bench/bcrypt` `{ op: "hash" | "compare", n, cost?, password, hash? }` runs bcryptjs `n` times.
 * - `POST /__bench/buffer` reads its body whole (`arrayBuffer()`) and answers its length: what an upload that
 *   buffered would hold, for the attachments scenario to show that its measure of memory sees it.
 * - `POST` and `GET /__bench/r2`: the attachments' floor, the least a Worker does to stream a body into R2 (the
 *   request's body straight into `ATTACHMENTS.put`) and back out (the object's body as the answer).
 *
 * The counter travels in an AsyncLocalStorage, so the app always sees one env with one (wrapped) binding.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import bcrypt from "bcryptjs";
import worker from "../src/index.ts";

// The worker's Durable Object class, which its wrangler.toml binding names (LIVE_HUB), exported as the real entry does.
export { LiveHub } from "../src/index.ts";

const totals = { requests: 0, queries: 0, late: 0, hubRequests: 0 };
/** Set while a request is handled; `done` once its response has been handed back. */
const current = new AsyncLocalStorage<{ queries: number; done: boolean }>();

function countRoundTrip(): void {
  totals.queries++;
  const counter = current.getStore();
  // A body stream's pull runs outside the request's async context, so without a counter: late.
  if (counter && !counter.done) counter.queries++;
  else totals.late++;
}

/** Proxies hand the real objects to D1's own methods (batch needs real statements, not proxies). */
const unwrapped = new WeakMap<object, object>();
const unwrap = (value: unknown): unknown =>
  (typeof value === "object" && value !== null ? unwrapped.get(value) : undefined) ?? value;

type AnyFunction = (...args: unknown[]) => unknown;

function wrap<T extends object>(target: T, wrapMember: (name: string, method: AnyFunction) => AnyFunction): T {
  const proxy = new Proxy(target, {
    get(obj, prop) {
      const value = Reflect.get(obj, prop, obj) as unknown;
      if (typeof value !== "function" || typeof prop !== "string") return value;
      return wrapMember(prop, (value as AnyFunction).bind(obj));
    },
  });
  unwrapped.set(proxy, target);
  return proxy;
}

const counted =
  (method: AnyFunction): AnyFunction =>
  (...args) => {
    countRoundTrip();
    return method(...args);
  };

function wrapStatement(statement: object): object {
  return wrap(statement, (name, method) => {
    if (name === "bind") return (...args) => wrapStatement(method(...args) as object);
    return ["first", "all", "run", "raw"].includes(name) ? counted(method) : method;
  });
}

/** A D1Database or a D1DatabaseSession: `prepare` gives counted statements, `batch` and `exec` count once. */
function wrapDatabase<T extends object>(db: T): T {
  return wrap(db, (name, method) => {
    if (name === "prepare") return (...args) => wrapStatement(method(...args) as object);
    if (name === "withSession") return (...args) => wrapDatabase(method(...args) as object);
    if (name === "batch")
      return counted((statements, ...rest) => method((statements as unknown[]).map(unwrap), ...rest));
    return name === "exec" ? counted(method) : method;
  });
}

/**
 * A hub's stub with each call of a method counted. Not through `wrap`: an RPC stub answers any property, so
 * `method.bind` would be a remote property rather than Function.prototype.bind.
 */
function countingStub(stub: object): object {
  return new Proxy(stub, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown;
      if (typeof prop !== "string" || typeof value !== "function") return value;
      return (...args: unknown[]) => {
        totals.hubRequests++;
        return Reflect.apply<object, unknown[], unknown>(value as AnyFunction, target, args);
      };
    },
  });
}

const countingHubs = (namespace: object) =>
  wrap(namespace, (name, method) => (name === "get" ? (...args) => countingStub(method(...args) as object) : method));

/** Hubs that do nothing: every method resolves at once. */
const idleHubs = { idFromName: () => ({}), get: () => new Proxy({}, { get: () => () => Promise.resolve(undefined) }) };

type FetchHandler = (request: Request, env: unknown, ctx: ExecutionContext) => Response | Promise<Response>;
const appFetch: FetchHandler = (worker as unknown as { fetch: FetchHandler }).fetch.bind(worker);

/**
 * Two wrapped envs per real env object (hubs counted, or idle), so the app sees a stable env identity across requests.
 */
const wrappedEnvs = new WeakMap<object, { counted: object; idle: object }>();
function countingEnv(env: Record<string, unknown>, hubs: "counted" | "idle"): object {
  let wrapped = wrappedEnvs.get(env);
  if (!wrapped) {
    const DB = wrapDatabase(env.DB as object);
    wrapped = {
      counted: { ...env, DB, LIVE_HUB: countingHubs(env.LIVE_HUB as object) },
      idle: { ...env, DB, LIVE_HUB: idleHubs },
    };
    wrappedEnvs.set(env, wrapped);
  }
  return wrapped[hubs];
}

async function bcryptProbe(request: Request): Promise<Response> {
  const body = await request.json<{ op?: unknown; n?: unknown; cost?: unknown; password?: unknown; hash?: unknown }>();
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

const FLOOR_KEY = "bench-floor";

async function r2Floor(request: Request, bucket: R2Bucket): Promise<Response> {
  if (request.method === "POST") {
    await bucket.put(FLOOR_KEY, request.body);
    return new Response(null, { status: 201 });
  }
  const object = await bucket.get(FLOOR_KEY);
  return object ? new Response(object.body) : new Response(null, { status: 404 });
}

export default {
  async fetch(request: Request, env: Record<string, unknown>, ctx: ExecutionContext): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname === "/__bench/d1-stats") return Response.json(totals);
    if (pathname === "/__bench/bcrypt" && request.method === "POST") return bcryptProbe(request);
    if (pathname === "/__bench/buffer" && request.method === "POST")
      return Response.json({ bytes: (await request.arrayBuffer()).byteLength });
    if (pathname === "/__bench/r2") return r2Floor(request, env.ATTACHMENTS as R2Bucket);

    const counter = { queries: 0, done: false };
    totals.requests++;
    const hubs = request.headers.get("X-Bench-Hub") === "off" ? "idle" : "counted";
    const response = await current.run(counter, () => appFetch(request, countingEnv(env, hubs), ctx));
    counter.done = true;
    const headers = new Headers(response.headers);
    headers.set("X-Bench-D1-Queries", String(counter.queries));
    // A live-updates upgrade keeps its socket.
    return new Response(response.body, {
      status: response.status,
      statusText: response.statusText,
      headers,
      webSocket: response.webSocket,
    });
  },
} satisfies ExportedHandler<Record<string, unknown>>;
