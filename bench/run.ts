/**
 * `npm run bench`: our worker against a bare "floor" worker, in the Workers runtime (workerd through
 * Miniflare, no `wrangler dev` proxy), in the same run. See bench/README.md.
 *
 *   1. bundles our worker with `wrangler deploy --dry-run` (and the bench-only counting build);
 *   2. starts one Miniflare with our worker, the counting build and bench/floor-worker.js on loopback,
 *      with wrangler.toml's settings and a fresh D1 in a temporary directory, migrated from drizzle/;
 *   3. per scenario: seeds, checks the answers, counts D1 round trips per request, warms up, then loads
 *      with autocannon, alternating ours and the floor;
 *   4. times bcrypt inside workerd and login against one compare;
 *   5. prints the table and writes results.md, results.json and list-latency.svg.
 *
 * Exits non-zero when a request failed or answered an unexpected status (smoke mode is meant for CI).
 */
import { execFileSync } from "node:child_process";
import { createServer } from "node:net";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, totalmem } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import bcrypt from "bcryptjs";
import { buildBundle, type Bundle } from "./lib/build.ts";
import {
  closeConnections,
  download,
  median,
  percentile,
  runLoad,
  send,
  type RequestFactory,
  type RequestSpec,
  type RunStats,
  type SingleResult,
} from "./lib/load.ts";
import { cpuNanoseconds, workerdPids } from "./lib/cpu.ts";
import { startListClients } from "./lib/list-client.ts";
import { readOptions, type Options } from "./lib/options.ts";
import { DATABASE_ISOLATE, profileWorker, summarizeProfile, type CpuProfile } from "./lib/profile.ts";
import {
  bcryptLines,
  bundleLines,
  cpuLines,
  featureLines,
  largeLines,
  latencySvg,
  markdown,
  pollVerdicts,
  pollVerdictText,
  READ_P99_TARGET,
  readPairs,
  summarize,
  textTable,
  type BcryptTimings,
  type ChartPoint,
  type CpuRow,
  type FeatureCost,
  type D1Count,
  type LargeListPoint,
  type ReadDuringList,
  type ReadPairs,
  type Results,
  type ScenarioResult,
} from "./lib/report.ts";
import { startRuntime, type Runtime, type WorkerName } from "./lib/runtime.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const benchDir = join(root, "bench");
const opts: Options = readOptions(process.argv.slice(2), process.env, benchDir);

const BCRYPT_COST = 10;
/** The issue's bound on the deployable bundle. */
const BUNDLE_GZIP_TARGET = 100 * 1024;
const LOGIN_EMAIL = "bench-login@example.com";
/**
 * The login scenario logs in as many accounts in turn, as many users would: more than 10 logins in flight
 * to one address lock it (issue 8's limit holds under concurrency), so 32 connections on one account
 * would measure the lock, not the login.
 */
const LOGIN_ACCOUNTS = 64;
const loginEmail = (i: number) => (i === 0 ? LOGIN_EMAIL : LOGIN_EMAIL.replace("@", `-${i}@`));
const LOGIN_PASSWORD = "bench password 123";
const runTag = randomBytes(4).toString("hex");

let runtime: Runtime | undefined;
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    const rt = runtime;
    runtime = undefined;
    if (rt) {
      await Promise.race([rt.dispose(), new Promise((resolve) => setTimeout(resolve, 15_000).unref())]).catch((err) =>
        console.error("[bench] cleanup failed:", err),
      );
    }
  })();
  return cleaning;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`\n[bench] ${signal}: stopping the runtime and removing the temporary database...`);
    void cleanup().finally(() => process.exit(130));
  });
}

// Bounded in time: a hard limit well above what the settings need, whatever hangs.
const scenarioCount = 16;
const largeSeconds = opts.largeCounts.reduce((sum, n) => sum + n, 0) * (opts.largeReps + 1) * 0.05;
const expectedSeconds = 120 + scenarioCount * (2 * opts.warmup + 2 * opts.pairs * opts.duration + 30) + largeSeconds + 300;
const watchdog = setTimeout(() => {
  console.error(`[bench] gave up after ${Math.round(expectedSeconds * 2)} s; cleaning up.`);
  void cleanup().finally(() => process.exit(2));
}, expectedSeconds * 2 * 1000);
watchdog.unref();

const log = (line: string) => console.log(line);
const fmt = (n: number | undefined, digits = 1) => (n !== undefined && Number.isFinite(n) ? n.toFixed(digits) : "-");
const wants = (key: string) => !opts.only || opts.only.includes(key);
const failures: string[] = [];
const findings: string[] = [];
const observations: string[] = [];

/** The commit the bundle was built from, and whether src/ (or the config) had uncommitted changes. */
function sourceState(): string {
  try {
    const git = (...args: string[]) => execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const commit = git("rev-parse", "--short", "HEAD");
    const dirty = git("status", "--porcelain", "--", "src", "drizzle", "wrangler.toml", "package.json") !== "";
    return dirty ? `${commit} with uncommitted changes in src/, drizzle/ or the config` : commit;
  } catch {
    return "unknown (no git)";
  }
}

function versionOf(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(join(root, "node_modules", pkg, "package.json"), "utf8")) as { version: string }).version;
  } catch {
    return "?";
  }
}

// ---------------------------------------------------------------------------------------------------
// Database state

/**
 * The notes seeded: numbered ones ("Seeded note N", "Short content of seeded note number N."), or copies
 * of one note of 120 characters of content, whose 10,000 JSON objects no longer fit one chunk of the list
 * (src/notes/list.ts): what made the harness the performance issue quotes disagree with ours.
 */
type Seed = "numbered" | "copies";
const SEED_SQL: Record<Seed, string> = {
  numbered: "'Seeded note ' || n, 'Short content of seeded note number ' || n || '.'",
  copies: "'Note', printf('%.120c', 'x')",
};

async function seedNotes(rt: Runtime, count: number, seed: Seed = "numbered"): Promise<{ lo: number; hi: number }> {
  await rt.sql("DELETE FROM notes");
  // One statement, whatever the count: a recursive CTE generates the rows inside SQLite.
  await rt.sql(
    `WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?1)
     INSERT INTO notes (title, content, created_at)
     SELECT ${SEED_SQL[seed]}, ?2 + n FROM seq`,
    count,
    Date.UTC(2026, 0, 1),
  );
  const [row] = await rt.sql("SELECT count(*) AS n, min(id) AS lo, max(id) AS hi FROM notes");
  if (Number(row?.n) !== count) throw new Error(`seeding ${count} notes left ${String(row?.n)}`);
  return { lo: Number(row!.lo), hi: Number(row!.hi) };
}

async function seedLoginAccount(rt: Runtime): Promise<string> {
  const hash = bcrypt.hashSync(LOGIN_PASSWORD, BCRYPT_COST);
  for (let i = 0; i < LOGIN_ACCOUNTS; i++) {
    await rt.sql("INSERT INTO users (email, password, isVerified) VALUES (?1, ?2, 1) ON CONFLICT (email) DO NOTHING", loginEmail(i), hash);
  }
  const [row] = await rt.sql("SELECT password FROM users WHERE email = ?1", LOGIN_EMAIL);
  return String(row!.password);
}

/** The users of the NOTES_AUTH=required scenarios: the base notes are shared out among them, round robin. */
const PRIVATE_USERS = 16;
/** Their access tokens, by user index; a note's owner is user `id % PRIVATE_USERS`. */
let accessTokens: string[] | undefined;

/**
 * For the NOTES_AUTH=required scenarios: PRIVATE_USERS accounts, each logged in once (a real login, so a
 * real session), and the base notes shared out among them (note `id` goes to user `id % PRIVATE_USERS`).
 */
let ownedRange: typeof idRange;
async function ensurePrivateNotes(rt: Runtime): Promise<void> {
  await ensureBaseNotes(rt);
  if (!accessTokens) {
    await seedLoginAccount(rt);
    const tokens: string[] = [];
    for (let i = 0; i < PRIVATE_USERS; i++) {
      const answer = await send(rt.urls.appPrivate, {
        method: "POST",
        path: "/auth/login",
        body: JSON.stringify({ email: loginEmail(i), password: LOGIN_PASSWORD }),
      });
      if (answer.status !== 200) throw new Error(`bench login answered ${answer.status}: ${answer.body.slice(0, 200)}`);
      tokens.push((JSON.parse(answer.body) as { token: string }).token);
    }
    accessTokens = tokens;
  }
  // The base notes are seeded again after a scenario that replaced them: share the new ones out.
  if (ownedRange !== idRange) {
    for (let i = 0; i < PRIVATE_USERS; i++) {
      await rt.sql("UPDATE notes SET user_id = (SELECT id FROM users WHERE email = ?1) WHERE id % ?2 = ?3", loginEmail(i), PRIVATE_USERS, i);
    }
    ownedRange = idRange;
  }
}

/** The bearer header of a note's owner, or of a random user. */
function bearerOf(id = Math.floor(Math.random() * PRIVATE_USERS)): Record<string, string> {
  return { Authorization: `Bearer ${accessTokens![id % PRIVATE_USERS]}` };
}

// ---------------------------------------------------------------------------------------------------
// Scenarios

interface Scenario {
  key: string;
  title: string;
  detail: string;
  expectStatus: number;
  withFloor: boolean;
  /** At most this many D1 round trips per request (the issue's targets). */
  d1Target: number | undefined;
  /** The least median ours/floor throughput ratio the issue asks for. */
  ratioTarget?: number;
  setup?: (rt: Runtime) => Promise<void>;
  request: RequestFactory;
  /** Compare our JSON answer with the floor's for the same request. */
  compareJson?: "equal" | "shape";
  /** Latency chart point (list scenarios): the list size. */
  chartSize?: number;
  /** Run against our worker with NOTES_AUTH=required (requests carry an access token). */
  private?: boolean;
}

/** The floor a scenario is measured against: the bare one, or the same-work one for NOTES_AUTH=required. */
const floorWorker = (s: Scenario): WorkerName => (s.private ? "floorAuth" : "floor");
const floorUrl = (rt: Runtime, s: Scenario) => rt.urls[floorWorker(s)];

/** Our worker (or its counting build) as the scenario needs it: public notes, or NOTES_AUTH=required. */
const ourWorker = (s: Scenario, counting = false): WorkerName =>
  s.private ? (counting ? "countingPrivate" : "appPrivate") : counting ? "counting" : "app";
const ourUrl = (rt: Runtime, s: Scenario, counting = false) => rt.urls[ourWorker(s, counting)];

let idRange: { lo: number; hi: number } | undefined;
/** The single-note scenarios share one seed of opts.baseNotes notes (made by whichever runs first). */
async function ensureBaseNotes(rt: Runtime): Promise<void> {
  idRange ??= await seedNotes(rt, opts.baseNotes);
}
const randomId = () => idRange!.lo + Math.floor(Math.random() * (idRange!.hi - idRange!.lo + 1));
let counter = 0;

function listScenario(size: number, seed: Seed = "numbered"): Scenario {
  return {
    key: seed === "numbered" ? `list-${size}` : `list-${size}-copies`,
    title: "GET /notes",
    detail: `${size.toLocaleString("en-US")} notes${seed === "numbered" ? "" : ", copies of one note of 120 characters (two list chunks)"}`,
    expectStatus: 200,
    withFloor: true,
    d1Target: 1,
    setup: async (rt) => {
      await seedNotes(rt, size, seed);
      idRange = undefined;
    },
    request: () => ({ method: "GET", path: "/notes" }),
    compareJson: "equal",
    chartSize: size,
    ratioTarget: 1,
  };
}

/**
 * `GET /notes` with the list's own ETag in If-None-Match: a poll answered 304 from the notes' version
 * alone. No floor: compare its req/s with GET /notes/{id}'s (the performance issue: about a single read).
 */
function pollScenario(size: number): Scenario {
  let etag = "";
  return {
    key: `poll-${size}`,
    title: "GET /notes with If-None-Match",
    detail: `${size.toLocaleString("en-US")} notes, 304`,
    expectStatus: 304,
    withFloor: false,
    d1Target: 1,
    setup: async (rt) => {
      await seedNotes(rt, size);
      idRange = undefined;
      etag = (await send(rt.urls.app, { method: "GET", path: "/notes" })).headers.etag ?? "";
    },
    request: () => ({ method: "GET", path: "/notes", headers: { "If-None-Match": etag } }),
  };
}

/** The notes a search scenario searches (the seeded notes: "Seeded note N", "Short content of seeded note number N."). */
const SEARCH_NOTES = 10_000;
let searchSeeded = false;

/** `GET /notes?q=…` over SEARCH_NOTES notes, one page of the default size. No floor: it has no search. */
function searchScenario(key: string, detail: string, q: () => string): Scenario {
  return {
    key,
    title: "GET /notes?q=",
    detail: `${SEARCH_NOTES.toLocaleString("en-US")} notes, ${detail}`,
    expectStatus: 200,
    withFloor: false,
    d1Target: 1,
    setup: async (rt) => {
      if (searchSeeded) return;
      await seedNotes(rt, SEARCH_NOTES);
      // The base notes are gone: a later single-note scenario seeds them again.
      idRange = undefined;
      searchSeeded = true;
    },
    request: () => ({ method: "GET", path: `/notes?q=${encodeURIComponent(q())}` }),
  };
}

/**
 * The NOTES_AUTH=required scenarios, each against the same-work floor (bench/floor-auth-worker.js): a note
 * is read or changed with its owner's token, a note is created or a page listed by a random user's.
 */
function privateScenarios(base: string): Scenario[] {
  const common = { withFloor: true, d1Target: 1, private: true, ratioTarget: 0.9, setup: ensurePrivateNotes } as const;
  const detail = (what: string) => `NOTES_AUTH=required, ${PRIVATE_USERS} users${what ? `, ${what}` : ""}`;
  return [
    {
      ...common,
      key: "get-note-private",
      title: "GET /notes/{id}",
      detail: detail(`random among ${base}`),
      expectStatus: 200,
      request: () => {
        const id = randomId();
        return { method: "GET", path: `/notes/${id}`, headers: bearerOf(id) };
      },
      compareJson: "equal",
    },
    {
      ...common,
      key: "update-note-private",
      title: "PATCH /notes/{id}",
      detail: detail(`random among ${base}`),
      expectStatus: 200,
      request: () => {
        const id = randomId();
        const body = JSON.stringify({ title: `Patched ${++counter}`, content: "Updated by the benchmark." });
        return { method: "PATCH", path: `/notes/${id}`, headers: bearerOf(id), body };
      },
      compareJson: "shape",
    },
    {
      ...common,
      key: "create-note-private",
      title: "POST /notes",
      detail: detail(""),
      expectStatus: 201,
      request: () => ({
        method: "POST",
        path: "/notes",
        headers: bearerOf(),
        body: JSON.stringify({ title: "Bench note", content: "Written by the benchmark, short content." }),
      }),
      compareJson: "shape",
    },
    {
      ...common,
      key: "page-50-private",
      title: "GET /notes?limit=50",
      detail: detail(`a page of the user's ${Math.floor(opts.baseNotes / PRIVATE_USERS)} notes`),
      expectStatus: 200,
      request: () => {
        const user = Math.floor(Math.random() * PRIVATE_USERS);
        return { method: "GET", path: "/notes?limit=50", headers: bearerOf(user) };
      },
      compareJson: "equal",
    },
  ];
}

function scenarios(): Scenario[] {
  const base = opts.baseNotes.toLocaleString("en-US");
  return [
    {
      key: "get-note",
      ratioTarget: 0.95,
      title: "GET /notes/{id}",
      detail: `random among ${base}`,
      expectStatus: 200,
      withFloor: true,
      d1Target: 1,
      setup: ensureBaseNotes,
      request: () => ({ method: "GET", path: `/notes/${randomId()}` }),
      compareJson: "equal",
    },
    {
      key: "update-note",
      ratioTarget: 0.95,
      title: "PATCH /notes/{id}",
      detail: `random among ${base}`,
      expectStatus: 200,
      withFloor: true,
      d1Target: 1,
      setup: ensureBaseNotes,
      request: () => ({
        method: "PATCH",
        path: `/notes/${randomId()}`,
        body: JSON.stringify({ title: `Patched ${++counter}`, content: "Updated by the benchmark." }),
      }),
      compareJson: "shape",
    },
    {
      key: "create-note",
      ratioTarget: 0.95,
      title: "POST /notes",
      detail: "",
      expectStatus: 201,
      withFloor: true,
      d1Target: 1,
      request: () => ({
        method: "POST",
        path: "/notes",
        body: JSON.stringify({ title: "Bench note", content: "Written by the benchmark, short content." }),
      }),
      compareJson: "shape",
    },
    ...privateScenarios(base),
    {
      key: "not-found",
      title: "GET /no-such-path",
      detail: "404",
      expectStatus: 404,
      withFloor: false,
      d1Target: undefined,
      request: () => ({ method: "GET", path: "/no-such-path" }),
    },
    searchScenario("search-10000", "one note's two words (a title word and a content word), random note", () => {
      const n = 1 + Math.floor(Math.random() * SEARCH_NOTES);
      return `seeded ${n}`;
    }),
    searchScenario("search-10000-common", "a word every note holds: ranks all 10,000, answers the best 20", () => "seeded"),
    listScenario(opts.listSizes[0]),
    listScenario(opts.listSizes[1]),
    pollScenario(opts.listSizes[1]),
    listScenario(opts.listSizes[1], "copies"),
    {
      key: "register",
      title: "POST /auth/register",
      detail: "mail not configured",
      expectStatus: 201,
      withFloor: false,
      d1Target: 2,
      request: () => ({
        method: "POST",
        path: "/auth/register",
        body: JSON.stringify({ email: `bench-${runTag}-${++counter}@example.com`, password: LOGIN_PASSWORD }),
      }),
    },
    {
      key: "login",
      title: "POST /auth/login",
      detail: `verified, ${LOGIN_ACCOUNTS} accounts in turn, BCRYPT_COST=${BCRYPT_COST}`,
      expectStatus: 200,
      withFloor: false,
      d1Target: 2,
      setup: async (rt) => void (await seedLoginAccount(rt)),
      request: () => ({
        method: "POST",
        path: "/auth/login",
        body: JSON.stringify({ email: loginEmail(++counter % LOGIN_ACCOUNTS), password: LOGIN_PASSWORD }),
      }),
    },
  ];
}

// ---------------------------------------------------------------------------------------------------
// Checks and counts outside the load

interface D1Stats {
  requests: number;
  queries: number;
  late: number;
  last: string[];
  /** The longest round trip of the last request, in milliseconds. */
  slowestMs: number;
  /** D1's rows written (index entries included), summed over the round trips that report them. */
  rowsWritten: number;
}

/** The running D1 totals of one counting build (each worker counts its own). */
async function d1Stats(countingUrl: string): Promise<D1Stats> {
  return JSON.parse((await send(countingUrl, { method: "GET", path: "/__bench/d1-stats" })).body) as D1Stats;
}

function shapeOf(body: string): string {
  try {
    const value = JSON.parse(body) as unknown;
    const one: unknown = Array.isArray(value) ? (value as unknown[])[0] : value;
    if (typeof one !== "object" || one === null) return typeof one;
    return Object.entries(one)
      .map(([key, v]) => `${key}:${typeof v}`)
      .join(",");
  } catch {
    return "not JSON";
  }
}

/** One request to ours and to the floor: statuses, and the JSON compared where it can be. */
async function checkAnswers(rt: Runtime, s: Scenario, problems: string[]): Promise<{ sameJson: boolean | undefined; oursMs: number }> {
  const spec = s.request();
  const ours = await send(ourUrl(rt, s), spec);
  if (ours.status !== s.expectStatus) problems.push(`ours answered ${ours.status} (expected ${s.expectStatus}): ${ours.body.slice(0, 200)}`);
  if (!s.withFloor) return { sameJson: undefined, oursMs: ours.ms };
  // The same request again for the floor (a fresh one where the request writes).
  const floorSpec: RequestSpec = s.compareJson === "equal" ? spec : s.request();
  const floor = await send(floorUrl(rt, s), floorSpec);
  if (floor.status !== s.expectStatus) problems.push(`floor answered ${floor.status} (expected ${s.expectStatus}): ${floor.body.slice(0, 200)}`);
  let same: boolean | undefined;
  if (s.compareJson === "equal") same = JSON.stringify(JSON.parse(ours.body)) === JSON.stringify(JSON.parse(floor.body));
  else if (s.compareJson === "shape") same = shapeOf(ours.body) === shapeOf(floor.body);
  if (same === false) problems.push(`ours and the floor answered different JSON: ${ours.body.slice(0, 150)} vs ${floor.body.slice(0, 150)}`);
  return { sameJson: same, oursMs: ours.ms };
}

/** Repeated round trips once, with a count: `all: SELECT ... ×20`. */
function collapse(statements: string[]): string[] {
  const out: { text: string; times: number }[] = [];
  for (const text of statements) {
    const last = out.at(-1);
    if (last?.text === text) last.times++;
    else out.push({ text, times: 1 });
  }
  return out.map(({ text, times }) => (times > 1 ? `${text} ×${times}` : text));
}

async function countQueries(rt: Runtime, s: Scenario, problems: string[], requests: number): Promise<D1Count> {
  const before = await d1Stats(ourUrl(rt, s, true));
  const header: number[] = [];
  for (let i = 0; i < requests; i++) {
    const answer = await send(ourUrl(rt, s, true), s.request());
    if (answer.status !== s.expectStatus) problems.push(`counting build answered ${answer.status}: ${answer.body.slice(0, 200)}`);
    header.push(Number(answer.headers["x-bench-d1-queries"] ?? Number.NaN));
  }
  const after = await d1Stats(ourUrl(rt, s, true));
  const perRequest = (after.queries - before.queries) / requests;
  // The list streams its later chunks after the answer has started; the issue sets those aside.
  const targetBasis = s.chartSize !== undefined ? "before the response" : "all round trips";
  const measured = targetBasis === "all round trips" ? perRequest : Math.max(...header);
  return {
    perRequest,
    header,
    late: after.late - before.late,
    requests,
    target: s.d1Target,
    targetBasis,
    meetsTarget: s.d1Target === undefined ? undefined : measured <= s.d1Target,
    statements: after.last,
  };
}

// ---------------------------------------------------------------------------------------------------
// Load

interface LoadPlan {
  mode: string;
  amount: number | undefined;
  timeout: number;
  warmup: boolean;
}

/**
 * How to load a scenario whose single request takes `singleMs`: with one isolate, a request under load
 * waits for roughly every other connection's, so latency ≈ connections × singleMs at worst (less where
 * requests wait on I/O, as a streamed list does). When even that worst case would not let a connection
 * finish a request within the run, a fixed number of requests (two per connection) replaces the duration.
 */
function planLoad(singleMs: number): LoadPlan {
  const loadedSeconds = (singleMs * opts.connections) / 1000;
  const timeout = Math.max(10, Math.ceil(loadedSeconds * 4));
  if (loadedSeconds <= opts.duration) return { mode: "duration", amount: undefined, timeout, warmup: true };
  return { mode: `${opts.connections * 2} requests (slow)`, amount: opts.connections * 2, timeout, warmup: false };
}

function describeRun(r: RunStats): string {
  const extra = [r.errors ? `${r.errors} errors` : "", r.unexpected ? `${r.unexpected} unexpected` : ""].filter(Boolean).join(", ");
  const cpu = r.mainCpuUs === undefined ? "" : `  main thread ${fmt(r.mainCpuUs, 0).padStart(5)} µs/req, busy ${fmt(r.mainBusy! * 100, 0)}%`;
  return `${fmt(r.rps).padStart(8)} req/s  p50 ${fmt(r.p50, 2).padStart(8)} ms  p99 ${fmt(r.p99, 2).padStart(8)} ms${cpu}  (${r.requests} requests${extra ? `, ${extra}` : ""})`;
}

/** workerd's pids once it is up; none where /proc is not (then runs carry no CPU figures). */
let workerd: number[] = [];

/**
 * One run of the scenario's load, with what workerd's main thread spent on it: the thread that runs
 * every isolate and SQLite. Its CPU per response and how busy it was tell a run whose requests cost more
 * from one whose thread waited.
 */
async function load(url: string, s: Scenario, plan: LoadPlan, seconds: number, connections = opts.connections, pids = workerd): Promise<RunStats> {
  const before = pids.length ? cpuNanoseconds(pids) : undefined;
  const started = process.hrtime.bigint();
  const run = await runLoad({
    url,
    connections,
    duration: seconds,
    amount: plan.amount,
    timeout: plan.timeout,
    request: s.request,
    expectStatus: s.expectStatus,
  });
  if (before && run.requests) {
    const mainNs = cpuNanoseconds(pids).main - before.main;
    run.mainCpuUs = mainNs / run.requests / 1000;
    run.mainBusy = mainNs / Number(process.hrtime.bigint() - started);
  }
  return run;
}

/** A free loopback port, for workerd's inspector. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * `--profile`: one more run of the scenario's load on ours and on the floor, each while V8 samples that
 * worker's isolate and the database's. Writes the profiles (open them in Chrome's DevTools, Performance
 * tab) and prints each isolate's busy time per request and the functions that took most of it.
 */
async function profileScenario(rt: Runtime, s: Scenario, plan: LoadPlan): Promise<void> {
  const dir = join(opts.outDir, "profiles");
  mkdirSync(dir, { recursive: true });
  const sides: [string, WorkerName][] = [["ours", ourWorker(s)]];
  if (s.withFloor) sides.push(["floor", floorWorker(s)]);
  for (const [who, worker] of sides) {
    let run: RunStats | undefined;
    let profile: CpuProfile | undefined;
    // The database's isolate is sampled over the same load: the time each side costs it besides its own.
    const database = await profileWorker(rt.inspectorPort!, DATABASE_ISOLATE, async () => {
      profile = await profileWorker(rt.inspectorPort!, worker, async () => {
        run = await load(rt.urls[worker], s, plan, opts.duration);
      });
    });
    for (const [isolate, name] of [[profile!, who], [database, `${who}-database`]] as const) {
      const file = join(dir, `${s.key}-${name}.cpuprofile`);
      writeFileSync(file, JSON.stringify(isolate));
      const summary = summarizeProfile(isolate);
      log(`  profile of ${name} (${relative(root, file)}): isolate busy ${fmt((summary.busyMs / run!.requests) * 1000, 0)} µs per request over ${run!.requests} requests; most self time:`);
      for (const row of summary.top) log(`    ${fmt(row.share * 100, 1).padStart(5)}%  ${fmt((row.ms / run!.requests) * 1000, 1).padStart(6)} µs/req  ${row.name}`);
    }
  }
}

/** Per-pair ratios as the log shows them: "median 0.92, from 0.84 to 1.05". */
const medianAndRange = (values: number[]) => `median ${fmt(median(values), 2)}, from ${fmt(Math.min(...values), 2)} to ${fmt(Math.max(...values), 2)}`;

async function runScenario(rt: Runtime, s: Scenario): Promise<ScenarioResult> {
  const name = s.detail ? `${s.title} (${s.detail})` : s.title;
  log(`\n${name}`);
  const problems: string[] = [];
  await s.setup?.(rt);

  const { sameJson, oursMs } = await checkAnswers(rt, s, problems);
  const big = (s.chartSize ?? 0) >= 10_000;
  const d1 = await countQueries(rt, s, problems, big ? Math.min(3, opts.countRequests) : opts.countRequests);
  const shown = collapse(d1.statements);
  log(`  D1 round trips per request: ${fmt(d1.perRequest, 2)} (before the answer: ${[...new Set(d1.header)].join("/")}${d1.late ? `, while streaming: ${fmt(d1.late / d1.requests, 2)}` : ""}); one request: ${shown.join(" | ") || "none"}`);

  // The single check request was cold; time a warm one to plan the load.
  const warm = await send(ourUrl(rt, s), s.request());
  const plan = planLoad(Math.min(oursMs, warm.ms));
  if (plan.mode !== "duration") log(`  one request takes ${fmt(warm.ms, 0)} ms: loading with ${plan.mode}`);

  const targets = s.withFloor ? [ourUrl(rt, s), floorUrl(rt, s)] : [ourUrl(rt, s)];
  if (plan.warmup) for (const url of targets) await load(url, s, plan, opts.warmup);

  // Pairs of runs, the order alternating (ours first, then the floor first): whichever runs second in a
  // pair meets whatever drift the machine has (a test suite starting, a cache warming) as often as the other.
  const ours: RunStats[] = [];
  const floor: RunStats[] = [];
  for (let pair = 1; pair <= opts.pairs; pair++) {
    const oursFirst = pair % 2 === 1 || !s.withFloor;
    for (const who of oursFirst ? (["ours", "floor"] as const) : (["floor", "ours"] as const)) {
      if (who === "floor" && !s.withFloor) continue;
      const run = await load(who === "ours" ? ourUrl(rt, s) : floorUrl(rt, s), s, plan, opts.duration);
      (who === "ours" ? ours : floor).push(run);
      log(`  ${who.padEnd(5)} ${pair}/${opts.pairs} ${describeRun(run)}`);
    }
  }

  if (opts.profile) await profileScenario(rt, s, plan);

  const ratios = s.withFloor ? ours.map((o, i) => o.rps / floor[i]!.rps) : undefined;
  const ratio = ratios ? median(ratios) : undefined;
  if (ratios) log(`  ours/floor: ${medianAndRange(ratios)} over ${ratios.length} pairs`);
  const cpuRatios = s.withFloor && [...ours, ...floor].every((run) => run.mainCpuUs) ? floor.map((f, i) => f.mainCpuUs! / ours[i]!.mainCpuUs!) : undefined;
  if (cpuRatios) log(`  floor/ours main-thread CPU per response: ${medianAndRange(cpuRatios)}`);
  const result: ScenarioResult = {
    key: s.key,
    title: s.title,
    detail: s.detail,
    expectStatus: s.expectStatus,
    ours,
    floor: s.withFloor ? floor : undefined,
    oursSummary: summarize(ours),
    floorSummary: s.withFloor ? summarize(floor) : undefined,
    ratios,
    ratio,
    ratioSpread: ratios ? { min: Math.min(...ratios), max: Math.max(...ratios) } : undefined,
    ratioTarget: s.ratioTarget,
    d1,
    sameJsonAsFloor: sameJson,
    problems,
  };
  if (ratio !== undefined && s.ratioTarget !== undefined && !(ratio >= s.ratioTarget)) {
    findings.push(`${name}: ours/floor ${fmt(ratio, 2)} (median of ${ratios!.length} pairs, ${fmt(result.ratioSpread!.min, 2)} to ${fmt(result.ratioSpread!.max, 2)}), target ≥ ${s.ratioTarget}.`);
  }
  for (const [who, runs] of [["ours", ours], ["floor", floor]] as const) {
    const sum = summarize(runs);
    if (runs.length && (sum.errors || sum.unexpected)) {
      failures.push(`${name}, ${who}: ${sum.errors} errors, ${sum.unexpected} answers with a status other than ${s.expectStatus}`);
    }
  }
  for (const p of new Set(problems)) failures.push(`${name}: ${p}`);
  if (d1.meetsTarget === false) {
    findings.push(
      `${name}: ${fmt(d1.perRequest, 2)} D1 round trips per request, target ≤ ${d1.target}. One request made: ${collapse(d1.statements).map((q) => `\`${q}\``).join(", ")}.`,
    );
  }
  if (d1.late && d1.targetBasis === "all round trips") {
    findings.push(`${name}: ${d1.late} D1 round trips after the response was returned (over ${d1.requests} requests).`);
  } else if (d1.late) {
    observations.push(
      `${name}: ${fmt(d1.perRequest, 2)} D1 round trips per request, ${Math.max(...d1.header)} before the answer and ` +
        `${fmt(d1.late / d1.requests, 2)} while the body streams (the list's later chunks, which the target sets aside).`,
    );
  }
  return result;
}

/** A list size that only the chart needs: ours alone, one run. */
async function chartPoint(rt: Runtime, size: number): Promise<ChartPoint | undefined> {
  const s = listScenario(size);
  log(`\nGET /notes (${s.detail}, chart only)`);
  await s.setup!(rt);
  const first = await send(rt.urls.app, s.request(), 300_000);
  if (first.status !== 200) {
    failures.push(`GET /notes with ${size} notes answered ${first.status}: ${first.body.slice(0, 200)}`);
    return undefined;
  }
  const warm = await send(rt.urls.app, s.request(), 300_000);
  const plan = planLoad(Math.min(first.ms, warm.ms));
  const estimate = plan.amount ? ((warm.ms * opts.connections) / 1000) * 2 : opts.duration;
  if (estimate > 240) {
    findings.push(`GET /notes with ${size} notes: one request takes ${fmt(warm.ms, 0)} ms; loading it with ${opts.connections} connections would take about ${fmt(estimate, 0)} s, skipped.`);
    log(`  one request takes ${fmt(warm.ms, 0)} ms: skipped (about ${fmt(estimate, 0)} s under load)`);
    return undefined;
  }
  if (plan.mode !== "duration") log(`  one request takes ${fmt(warm.ms, 0)} ms: loading with ${plan.mode}`);
  if (plan.warmup) await load(rt.urls.app, s, plan, opts.warmup);
  const run = await load(rt.urls.app, s, plan, opts.duration);
  log(`  ours  ${describeRun(run)}`);
  if (run.errors || run.unexpected) failures.push(`GET /notes with ${size} notes: ${run.errors} errors, ${run.unexpected} unexpected statuses`);
  return { size, p50: run.p50, p99: run.p99, rps: run.rps, requests: run.requests, connections: opts.connections, mode: plan.mode };
}

// ---------------------------------------------------------------------------------------------------
// Large notes: list time per MiB, and reads while large lists stream

const MiB = 1024 * 1024;

/**
 * Adds notes of exactly 1 MiB of content (random hex, so nothing compresses) up to `count`, in one
 * statement, after the `from` already there.
 */
async function seedLargeNotes(rt: Runtime, from: number, count: number): Promise<void> {
  await rt.sql(
    `WITH RECURSIVE seq(n) AS (SELECT ?1 + 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2)
     INSERT INTO notes (title, content, created_at)
     SELECT 'Large note ' || n, hex(randomblob(${(MiB - 20) / 2})) || printf('%020d', n), ?3 + n FROM seq`,
    from,
    count,
    Date.UTC(2026, 0, 1),
  );
}

/**
 * GET /notes over 40, 80, 160 and 320 notes of 1 MiB (by default): one request at a time against our
 * bundle (the median of a few), and one against the counting build for its D1 round trips and the longest
 * of them, which is how long the list held the database at once. Time per MiB should stay flat.
 */
async function largeNotes(rt: Runtime): Promise<LargeListPoint[]> {
  log(`\nGET /notes with notes of 1 MiB (${opts.largeCounts.join(", ")} notes), one request at a time`);
  await rt.sql("DELETE FROM notes");
  const points: LargeListPoint[] = [];
  let seeded = 0;
  for (const count of [...opts.largeCounts].sort((a, b) => a - b)) {
    await seedLargeNotes(rt, seeded, count);
    seeded = count;
    const check = (what: string, answer: { status: number; bytes: number; head: string; tail: string }) => {
      const plausible = answer.status === 200 && answer.head.startsWith('[{"id":') && answer.tail.endsWith('"}]') && answer.bytes > count * MiB;
      if (!plausible) failures.push(`GET /notes with ${count} notes of 1 MiB (${what}): status ${answer.status}, ${answer.bytes} bytes, starting ${answer.head.slice(0, 20)}`);
    };

    const before = await d1Stats(rt.urls.counting);
    const counted = await download(rt.urls.counting, "/notes");
    check("counting build", counted);
    const after = await d1Stats(rt.urls.counting);
    const ms: number[] = [];
    let bytes = 0;
    for (let i = 0; i < opts.largeReps; i++) {
      const answer = await download(rt.urls.app, "/notes");
      check("ours", answer);
      ms.push(answer.ms);
      bytes = answer.bytes;
    }
    const point: LargeListPoint = {
      notes: count,
      mib: bytes / MiB,
      bytes,
      ms,
      medianMs: median(ms),
      msPerMiB: median(ms) / (bytes / MiB),
      d1RoundTrips: after.queries - before.queries,
      slowestD1Ms: after.slowestMs,
    };
    points.push(point);
    log(
      `  ${String(count).padStart(4)} notes, ${fmt(point.mib)} MiB: ${fmt(point.medianMs, 0)} ms (${ms.map((v) => fmt(v, 0)).join(", ")}), ` +
        `${fmt(point.msPerMiB, 1)} ms per MiB; ${point.d1RoundTrips} D1 round trips, the longest ${point.slowestD1Ms} ms`,
    );
  }
  const perMiB = points.map((p) => p.msPerMiB);
  if (perMiB.length > 1 && Math.max(...perMiB) > 2 * Math.min(...perMiB)) {
    findings.push(`GET /notes with 1 MiB notes: time per MiB from ${fmt(Math.min(...perMiB), 1)} to ${fmt(Math.max(...perMiB), 1)} ms, not flat (target: roughly constant).`);
  }
  return points;
}

/** Connections reading single notes in the read-during-list scenario. */
const READ_CONNECTIONS = 4;
/** Whole lists streaming at once while single notes are read (the issue's attack ran two). */
const CONCURRENT_LISTS = 2;
/** Pairs of runs, alone and during the lists, per reader (one in smoke mode): a single p99 alone moves a lot. */
const READ_PAIRS = 3;

type ReadPair = ReadPairs["pairs"][number];

/**
 * CONCURRENT_LISTS clients listing all notes from `base` without pause, on their own thread
 * (bench/lib/list-client.ts), until `stop()`, which resolves to the times of the lists that completed.
 * Resolves once the lists have had a second to get going.
 */
async function streamLists(base: string): Promise<{ stop(): Promise<number[]> }> {
  const listMs: number[] = [];
  const clients = startListClients(base, CONCURRENT_LISTS, (report) => {
    if ("ms" in report) listMs.push(report.ms);
    else failures.push(`GET /notes during the read-during-list scenario answered ${report.status}`);
  });
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return {
    async stop() {
      await clients.stop();
      return listMs;
    },
  };
}

/**
 * GET /notes/{id} of small notes, loaded by a few connections, first alone and then while
 * CONCURRENT_LISTS whole lists of the large notes stream without pause: with one database answering one
 * query at a time, a read waits for whatever list query runs, so the list's queries must stay short.
 * Then the same from a second workerd process on a copy of the database, the lists still streaming from
 * the first: here every isolate and SQLite share one thread, which production's do not.
 */
async function readDuringList(rt: Runtime): Promise<ReadDuringList> {
  const [large] = await rt.sql("SELECT count(*) AS n, coalesce(sum(length(content)), 0) AS bytes FROM notes");
  await rt.sql(
    `WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 1000)
     INSERT INTO notes (title, content, created_at) SELECT 'Small note ' || n, 'Short content ' || n, ?1 + n FROM seq`,
    Date.UTC(2026, 0, 1),
  );
  const [range] = await rt.sql("SELECT min(id) AS lo, max(id) AS hi FROM notes WHERE title LIKE 'Small note %'");
  const lo = Number(range!.lo);
  const hi = Number(range!.hi);
  const listMiB = Number(large!.bytes) / MiB;
  const listNotes = Number(large!.n);
  log(`\nGET /notes/{id} (${READ_CONNECTIONS} connections) alone, then while ${CONCURRENT_LISTS} lists of ${listNotes} notes (${fmt(listMiB)} MiB) stream`);

  const s: Scenario = {
    key: "read-during-list",
    title: "GET /notes/{id}",
    detail: "",
    expectStatus: 200,
    withFloor: false,
    d1Target: 1,
    request: () => ({ method: "GET", path: `/notes/${lo + Math.floor(Math.random() * (hi - lo + 1))}` }),
  };
  const plan: LoadPlan = { mode: "duration", amount: undefined, timeout: 60, warmup: true };
  // The same reads from the floor, another isolate on the same database: if they slow down as ours do,
  // the time goes to the database; if ours slow down alone, to our isolate, which also streams the lists.
  const reads = async () => ({
    ours: await load(rt.urls.app, s, plan, opts.duration, READ_CONNECTIONS),
    floor: await load(rt.urls.floor, s, plan, opts.duration, READ_CONNECTIONS),
  });
  await load(rt.urls.app, s, plan, opts.warmup, READ_CONNECTIONS);
  await load(rt.urls.floor, s, plan, opts.warmup, READ_CONNECTIONS);
  const pairs = opts.smoke ? 1 : READ_PAIRS;
  const ours: ReadPair[] = [];
  const floor: ReadPair[] = [];
  const listMs: number[] = [];
  for (let pair = 1; pair <= pairs; pair++) {
    const alone = await reads();
    const streaming = await streamLists(rt.urls.app);
    const meanwhile = await reads();
    const completed = await streaming.stop();
    listMs.push(...completed);
    ours.push({ idle: alone.ours, during: meanwhile.ours });
    floor.push({ idle: alone.floor, during: meanwhile.floor });
    log(`  ${pair}/${pairs} alone         ${describeRun(alone.ours)}`);
    log(`  ${pair}/${pairs} during lists  ${describeRun(meanwhile.ours)}`);
    log(`  ${pair}/${pairs} floor alone   ${describeRun(alone.floor)}`);
    log(`  ${pair}/${pairs} floor during  ${describeRun(meanwhile.floor)}`);
    log(`  ${pair}/${pairs} lists completed meanwhile: ${completed.length} (${completed.map((v) => `${fmt(v / 1000, 1)} s`).join(", ")})`);
  }

  // Production's shape: the reads in another workerd process, on a copy of the database (a read replica),
  // while the lists stream from the first process as before.
  const replica = await rt.replica();
  // Its run lines give the second process's thread, not the first's.
  const replicaPids = workerd.length ? workerdPids().filter((pid) => !workerd.includes(pid)) : [];
  const second: ReadPair[] = [];
  let replicaListsCompleted = 0;
  try {
    await load(replica.url, s, plan, opts.warmup, READ_CONNECTIONS, replicaPids);
    for (let pair = 1; pair <= pairs; pair++) {
      const idle = await load(replica.url, s, plan, opts.duration, READ_CONNECTIONS, replicaPids);
      const streaming = await streamLists(rt.urls.app);
      const during = await load(replica.url, s, plan, opts.duration, READ_CONNECTIONS, replicaPids);
      const completed = await streaming.stop();
      replicaListsCompleted += completed.length;
      second.push({ idle, during });
      log(`  ${pair}/${pairs} another process, alone         ${describeRun(idle)}`);
      log(`  ${pair}/${pairs} another process, during lists  ${describeRun(during)} (${completed.length} lists completed)`);
    }
  } finally {
    await replica.dispose();
  }

  for (const [who, reader] of [["", ours], [" from the floor", floor], [" from another process", second]] as const) {
    for (const [i, { idle, during }] of reader.entries()) {
      for (const [when, run] of [["alone", idle], ["during lists", during]] as const) {
        if (run.errors || run.unexpected) failures.push(`GET /notes/{id}${who} ${when} (pair ${i + 1}): ${run.errors} errors, ${run.unexpected} unexpected statuses`);
      }
    }
  }
  const result: ReadDuringList = {
    connections: READ_CONNECTIONS,
    lists: CONCURRENT_LISTS,
    listNotes,
    listMiB,
    ours: readPairs(ours),
    floor: readPairs(floor),
    replica: readPairs(second),
    listsCompleted: listMs.length,
    listMs,
    replicaListsCompleted,
  };
  if (!(result.ours.p99Ratio <= READ_P99_TARGET)) {
    findings.push(
      `GET /notes/{id} while ${CONCURRENT_LISTS} large lists stream: p99 ${fmt(result.ours.p99Ratio, 1)}× its p99 alone (median of ${pairs} pairs), target ≤ ${READ_P99_TARGET}×.`,
    );
  }
  await rt.sql("DELETE FROM notes");
  return result;
}

// ---------------------------------------------------------------------------------------------------
// Search: how long indexing a large note holds D1

/**
 * About 1 MiB of text in words (3 to 10 letters, from a vocabulary of 20,000), the way prose looks to the
 * tokenizer: some 150,000 words, many of them distinct. (1 MiB of hex would be one word.)
 */
function wordsOfOneMiB(): string {
  const vocabulary = Array.from({ length: 20_000 }, () => randomBytes(8).toString("base64").replace(/[^a-z]/gi, "").slice(0, 3 + Math.floor(Math.random() * 8)) || "word");
  const words: string[] = [];
  let bytes = 0;
  while (bytes < MiB) {
    const word = vocabulary[Math.floor(Math.random() * vocabulary.length)]!;
    words.push(word);
    bytes += word.length + 1;
  }
  return words.join(" ").slice(0, MiB);
}

/**
 * Single statement times (D1's `meta.duration`) of writing a 1 MiB note: into `notes`, whose triggers index
 * it, and into a copy of the table without an index, then an update of its content (the old text leaves the
 * index, the new one enters) and its deletion. D1 runs one statement at a time per database, so this is how
 * long the write holds every other query back. Medians of five.
 */
async function searchIndexing(rt: Runtime): Promise<void> {
  log("\nIndexing a 1 MiB note (single D1 statement, meta.duration, median of 5)");
  await rt.sql("CREATE TABLE IF NOT EXISTS bench_plain_notes AS SELECT * FROM notes WHERE 0");
  const times = { indexed: [] as number[], plain: [] as number[], update: [] as number[], delete: [] as number[] };
  for (let i = 0; i < 5; i++) {
    const [content, replacement] = [wordsOfOneMiB(), wordsOfOneMiB()];
    const insert = "INSERT INTO %s (title, content, created_at) VALUES ('One MiB of words', ?1, 0) RETURNING id";
    const indexed = await rt.timedSql(insert.replace("%s", "notes"), content);
    times.indexed.push(indexed.durationMs);
    times.plain.push((await rt.timedSql(insert.replace("%s", "bench_plain_notes"), content)).durationMs);
    const id = indexed.rows[0]!.id;
    times.update.push((await rt.timedSql("UPDATE notes SET content = ?1 WHERE id = ?2", replacement, id)).durationMs);
    times.delete.push((await rt.timedSql("DELETE FROM notes WHERE id = ?1", id)).durationMs);
  }
  // Small notes, as POST and PATCH write them: one statement at a time (each its own transaction, so each
  // flushes its index entries), timed from Node, indexed table against plain, alternating.
  const small = { indexed: [] as number[], plain: [] as number[], update: [] as number[], updatePlain: [] as number[] };
  for (let i = 0; i < 400; i++) {
    for (const [table, into, updates] of [["notes", small.indexed, small.update], ["bench_plain_notes", small.plain, small.updatePlain]] as const) {
      let started = performance.now();
      const [row] = await rt.sql(`INSERT INTO ${table} (title, content, created_at) VALUES ('Bench note ' || ?1, 'Written by the benchmark, short content.', 0) RETURNING id`, i);
      into.push(performance.now() - started);
      started = performance.now();
      await rt.sql(`UPDATE ${table} SET title = 'Patched ' || ?1, content = 'Updated by the benchmark.' WHERE id = ?2`, i, row!.id);
      updates.push(performance.now() - started);
    }
  }
  await rt.sql("DELETE FROM notes WHERE title LIKE 'Patched %'");
  await rt.sql("DROP TABLE bench_plain_notes");
  const smallLine =
    `A short note, one statement at a time from Node: INSERT ${fmt(median(small.indexed), 2)} ms with the search index, ${fmt(median(small.plain), 2)} ms without; ` +
    `UPDATE of title and content ${fmt(median(small.update), 2)} ms with, ${fmt(median(small.updatePlain), 2)} ms without (medians of ${small.indexed.length}, round trip included).`;
  log(`  ${smallLine}`);
  observations.push(smallLine);
  const indexing =
    `Writing a 1 MiB note of words holds D1 for ${fmt(median(times.indexed), 1)} ms with the search index ` +
    `(${fmt(median(times.plain), 1)} ms into the same table without it); replacing its content ${fmt(median(times.update), 1)} ms, deleting it ${fmt(median(times.delete), 1)} ms ` +
    `(single statements, D1 meta.duration, median of ${times.indexed.length}).`;
  log(`  ${indexing}`);
  observations.push(indexing);

  // One search at a time over SEARCH_NOTES notes: the request as a client sees it (from Node, the app
  // build), and the D1 round trip as the Worker times it (the counting build).
  log(`\nSearch over ${SEARCH_NOTES.toLocaleString("en-US")} notes, one request at a time (medians of 21)`);
  await seedNotes(rt, SEARCH_NOTES);
  searchSeeded = true;
  idRange = undefined;
  for (const [what, q] of [
    ["a word of one note", () => `"${1 + Math.floor(Math.random() * SEARCH_NOTES)}"`],
    ["one note's words", () => `seeded ${1 + Math.floor(Math.random() * SEARCH_NOTES)}`],
    ["a word of every note", () => "seeded"],
  ] as const) {
    const requestMs: number[] = [];
    const d1Ms: number[] = [];
    for (let i = 0; i < 21; i++) {
      const path = `/notes?q=${encodeURIComponent(q())}`;
      const answer = await send(rt.urls.app, { method: "GET", path });
      if (answer.status !== 200) failures.push(`GET ${path} answered ${answer.status}`);
      requestMs.push(answer.ms);
      await send(rt.urls.counting, { method: "GET", path });
      d1Ms.push((await d1Stats(rt.urls.counting)).slowestMs);
    }
    const line = `Search over ${SEARCH_NOTES.toLocaleString("en-US")} notes for ${what}: ${fmt(median(requestMs), 1)} ms per request, of which the D1 query ${fmt(median(d1Ms), 1)} ms (one at a time, medians of 21).`;
    log(`  ${line}`);
    observations.push(line);
  }
}

// ---------------------------------------------------------------------------------------------------
// bcrypt inside workerd, and login against one compare

async function timeBcrypt(rt: Runtime, hash: string): Promise<BcryptTimings> {
  log(`\nbcrypt cost ${BCRYPT_COST} inside workerd`);
  // Inside workerd the clock stands still while JavaScript runs, so the time is taken from Node:
  // requests doing n = 1 and n = 0 operations, alternated; the difference of the medians is one operation.
  const probe = async (op: "hash" | "compare") => {
    const samples = { n0: [] as number[], n1: [] as number[] };
    const body = (n: number) => JSON.stringify({ op, n, cost: BCRYPT_COST, password: LOGIN_PASSWORD, hash });
    await send(rt.urls.counting, { method: "POST", path: "/__bench/bcrypt", body: body(1) }); // warm the isolate
    for (let i = 0; i < opts.bcryptReps; i++) {
      for (const n of [0, 1] as const) {
        const answer = await send(rt.urls.counting, { method: "POST", path: "/__bench/bcrypt", body: body(n) });
        if (answer.status !== 200) failures.push(`bcrypt probe (${op}) answered ${answer.status}: ${answer.body.slice(0, 200)}`);
        if (op === "compare" && n === 1 && !answer.body.includes('"matches":1')) failures.push(`bcrypt compare probe did not match: ${answer.body}`);
        samples[n === 0 ? "n0" : "n1"].push(answer.ms);
      }
    }
    return { ms: median(samples.n1) - median(samples.n0), samples };
  };
  const hashed = await probe("hash");
  const compared = await probe("compare");
  log(`  one hash ${fmt(hashed.ms)} ms, one compare ${fmt(compared.ms)} ms`);

  // Single-request latency, one request at a time: login, and a request doing exactly one compare at the
  // same cost. Interleaved request by request (and which goes first alternates), so whatever else slows the
  // machine hits both alike; medians over all pairs.
  const loginSpec = (): RequestSpec => ({ method: "POST", path: "/auth/login", body: JSON.stringify({ email: LOGIN_EMAIL, password: LOGIN_PASSWORD }) });
  const compareSpec = (): RequestSpec => ({
    method: "POST",
    path: "/__bench/bcrypt",
    body: JSON.stringify({ op: "compare", n: 1, password: LOGIN_PASSWORD, hash }),
  });
  const loginMs: number[] = [];
  const compareRequestMs: number[] = [];
  const timed = async (url: string, spec: RequestSpec, into: number[] | undefined, expect: number, what: string) => {
    const answer = await send(url, spec);
    if (answer.status !== expect) failures.push(`${what} answered ${answer.status}: ${answer.body.slice(0, 200)}`);
    into?.push(answer.ms);
  };
  for (let i = 0; i < 3; i++) {
    await timed(rt.urls.app, loginSpec(), undefined, 200, "login (sequential)");
    await timed(rt.urls.counting, compareSpec(), undefined, 200, "compare probe (sequential)");
  }
  for (let i = 0; i < opts.loginPairs; i++) {
    const pair = [
      () => timed(rt.urls.app, loginSpec(), loginMs, 200, "login (sequential)"),
      () => timed(rt.urls.counting, compareSpec(), compareRequestMs, 200, "compare probe (sequential)"),
    ];
    if (i % 2) pair.reverse();
    for (const run of pair) await run();
  }
  const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
  const loginP50 = median(loginMs);
  const compareRequestP50 = median(compareRequestMs);
  log(
    `  login, one at a time:          p50 ${fmt(loginP50, 2)} ms  p99 ${fmt(percentile(sorted(loginMs), 99), 2)} ms  (${loginMs.length} requests)\n` +
      `  one compare, one at a time:    p50 ${fmt(compareRequestP50, 2)} ms  p99 ${fmt(percentile(sorted(compareRequestMs), 99), 2)} ms  (${compareRequestMs.length} requests)`,
  );
  return {
    cost: BCRYPT_COST,
    hashMs: hashed.ms,
    compareMs: compared.ms,
    hashSamples: hashed.samples,
    compareSamples: compared.samples,
    loginP50,
    compareRequestP50,
    loginOverCompare: loginP50 / compareRequestP50,
    pairRatioMedian: median(loginMs.map((ms, i) => ms / compareRequestMs[i]!)),
    loginMs,
    compareRequestMs,
  };
}

// ---------------------------------------------------------------------------------------------------
// CPU time per request

/** Repetitions per endpoint: ours, the floor and the empty worker take turns. */
const CPU_REPS = 3;
/** Requests to the empty worker per repetition: its cost per request is the baseline taken off the others. */
const CPU_EMPTY_REQUESTS = 200;

interface CpuCase {
  key: string;
  label: string;
  requests: number;
  ours: WorkerName;
  floor?: WorkerName;
  expectStatus: number;
  setup?: (rt: Runtime) => Promise<void>;
  /** The next request: one at a time, so it may follow from the previous answer (a refresh chain). */
  next: (previous: SingleResult | undefined) => RequestSpec;
  /** Why the row cannot be measured yet (a feature not built), found after setup. */
  unavailable?: (rt: Runtime) => Promise<string | undefined>;
}

/** Milliseconds of workerd CPU per request over `count` requests in a row: all threads, and the main thread's. */
async function cpuPerRequest(
  pids: number[],
  url: string,
  count: number,
  next: CpuCase["next"],
  expectStatus: number,
  label: string,
): Promise<{ all: number; main: number }> {
  let previous: SingleResult | undefined;
  const before = cpuNanoseconds(pids);
  for (let i = 0; i < count; i++) {
    previous = await send(url, next(previous));
    if (previous.status !== expectStatus) {
      failures.push(`CPU time, ${label}: answered ${previous.status} (expected ${expectStatus}): ${previous.body.slice(0, 200)}`);
      break;
    }
  }
  const after = cpuNanoseconds(pids);
  return { all: (after.all - before.all) / count / 1e6, main: (after.main - before.main) / count / 1e6 };
}

/** GET /notes with the ETag of the last answer, or of a first request when there is none yet. */
function pollingCase(key: string, size: number, seed: (rt: Runtime) => Promise<void>): CpuCase {
  let etag: string | undefined;
  return {
    key,
    label: `GET /notes with a matching If-None-Match, ${size.toLocaleString("en-US")} notes`,
    requests: size >= 10_000 ? 50 : 200,
    ours: "app",
    expectStatus: 304,
    setup: seed,
    unavailable: async (rt) => {
      const first = await send(rt.urls.app, { method: "GET", path: "/notes" });
      etag = first.headers.etag;
      return etag ? undefined : "GET /notes carries no ETag yet";
    },
    next: () => ({ method: "GET", path: "/notes", headers: { "If-None-Match": etag! } }),
  };
}

function cpuCases(): CpuCase[] {
  const few = (n: number) => (opts.smoke ? Math.max(2, Math.ceil(n / 20)) : n);
  const seedList = (size: number) => async (rt: Runtime) => {
    const [row] = await rt.sql("SELECT count(*) AS n FROM notes WHERE user_id IS NULL");
    if (Number(row?.n) !== size) await seedNotes(rt, size);
    // The base notes are gone: the single-note cases seed them again.
    idRange = undefined;
  };
  const single = (key: string, label: string, base: Scenario) => ({
    key,
    label,
    requests: few(200),
    ours: (base.private ? "appPrivate" : "app") as WorkerName,
    floor: (base.private ? "floorAuth" : "floor") as WorkerName,
    expectStatus: base.expectStatus,
    setup: base.setup,
    next: () => base.request(),
  });
  const byKey = new Map([...scenarios(), ...privateScenarios(opts.baseNotes.toLocaleString("en-US"))].map((s) => [s.key, s]));
  const scenario = (key: string) => byKey.get(key)!;
  let refreshToken: string | undefined;
  let loginTurn = 0;
  return [
    { ...single("list-100", "GET /notes, 100 notes", scenario("get-note")), setup: seedList(100), next: () => ({ method: "GET", path: "/notes" }) },
    pollingCase("poll-100", 100, seedList(100)),
    {
      ...single("list-10000", "GET /notes, 10,000 notes", scenario("get-note")),
      requests: few(20),
      setup: seedList(10_000),
      next: () => ({ method: "GET", path: "/notes" }),
    },
    { ...pollingCase("poll-10000", 10_000, seedList(10_000)), requests: few(50) },
    {
      key: "search-10000",
      label: "GET /notes?q= (two words), 10,000 notes",
      requests: few(100),
      ours: "app",
      expectStatus: 200,
      setup: seedList(10_000),
      next: () => ({ method: "GET", path: `/notes?q=${encodeURIComponent(`seeded ${1 + Math.floor(Math.random() * 10_000)}`)}` }),
    },
    single("get-note", "GET /notes/{id}", scenario("get-note")),
    single("update-note", "PATCH /notes/{id}", scenario("update-note")),
    single("create-note", "POST /notes", scenario("create-note")),
    single("get-note-private", "GET /notes/{id}, NOTES_AUTH=required", scenario("get-note-private")),
    single("update-note-private", "PATCH /notes/{id}, NOTES_AUTH=required", scenario("update-note-private")),
    single("create-note-private", "POST /notes, NOTES_AUTH=required", scenario("create-note-private")),
    single("page-50-private", "GET /notes?limit=50, NOTES_AUTH=required", scenario("page-50-private")),
    {
      key: "refresh",
      label: "POST /auth/refresh",
      requests: few(100),
      ours: "app",
      expectStatus: 200,
      setup: async (rt) => {
        await seedLoginAccount(rt);
        const answer = await send(rt.urls.app, {
          method: "POST",
          path: "/auth/login",
          body: JSON.stringify({ email: loginEmail(LOGIN_ACCOUNTS - 1), password: LOGIN_PASSWORD }),
        });
        refreshToken = (JSON.parse(answer.body) as { refresh_token: string }).refresh_token;
      },
      // Each refresh rotates the session: the next one sends the token the last one answered.
      next: (previous) => {
        if (previous) refreshToken = (JSON.parse(previous.body) as { refresh_token: string }).refresh_token;
        return { method: "POST", path: "/auth/refresh", body: JSON.stringify({ refresh_token: refreshToken }) };
      },
    },
    {
      key: "login",
      label: `POST /auth/login, BCRYPT_COST=${BCRYPT_COST}`,
      requests: few(20),
      ours: "app",
      expectStatus: 200,
      setup: async (rt) => void (await seedLoginAccount(rt)),
      next: () => ({
        method: "POST",
        path: "/auth/login",
        body: JSON.stringify({ email: loginEmail(++loginTurn % LOGIN_ACCOUNTS), password: LOGIN_PASSWORD }),
      }),
    },
  ];
}

async function cpuTimes(rt: Runtime): Promise<CpuRow[]> {
  const pids = workerdPids();
  if (!pids.length) {
    observations.push("CPU time per request: no workerd process found below this one (Linux /proc needed); not measured.");
    return [];
  }
  log(`\nCPU time per request (workerd ${pids.join(", ")}), one request at a time, minus an empty worker's`);
  const empty = () => cpuPerRequest(pids, rt.urls.empty, CPU_EMPTY_REQUESTS, () => ({ method: "GET", path: "/" }), 200, "empty worker");
  const rows: CpuRow[] = [];
  for (const c of cpuCases()) {
    await c.setup?.(rt);
    const skipped = await c.unavailable?.(rt);
    if (skipped) {
      log(`  ${c.label}: not measured (${skipped})`);
      rows.push({ key: c.key, label: c.label, requests: 0, oursMs: Number.NaN, spread: { min: Number.NaN, max: Number.NaN }, oursMainMs: Number.NaN, skipped });
      continue;
    }
    const ours: number[] = [];
    const oursMain: number[] = [];
    const floor: number[] = [];
    const floorMain: number[] = [];
    for (let rep = 0; rep < CPU_REPS; rep++) {
      const baseline = await empty();
      const mine = await cpuPerRequest(pids, rt.urls[c.ours], c.requests, c.next, c.expectStatus, c.label);
      ours.push(mine.all - baseline.all);
      oursMain.push(mine.main - baseline.main);
      if (!c.floor) continue;
      const theirs = await cpuPerRequest(pids, rt.urls[c.floor], c.requests, c.next, c.expectStatus, `${c.label} (floor)`);
      floor.push(theirs.all - baseline.all);
      floorMain.push(theirs.main - baseline.main);
    }
    const row: CpuRow = {
      key: c.key,
      label: c.label,
      requests: c.requests,
      oursMs: median(ours),
      spread: { min: Math.min(...ours), max: Math.max(...ours) },
      floorMs: floor.length ? median(floor) : undefined,
      oursMainMs: median(oursMain),
      floorMainMs: floorMain.length ? median(floorMain) : undefined,
    };
    rows.push(row);
    const floorPart = row.floorMs === undefined ? "" : `, floor ${fmt(row.floorMs, 2)} ms`;
    const mainPart = `; main thread ${fmt(row.oursMainMs, 2)} ms${row.floorMainMs === undefined ? "" : `, floor ${fmt(row.floorMainMs, 2)} ms`}`;
    log(`  ${c.label}: ${fmt(row.oursMs, 2)} ms (${ours.map((v) => fmt(v, 2)).join(", ")})${floorPart}${mainPart}`);
    if (row.oursMs > 10) observations.push(`CPU time: ${c.label} takes ${fmt(row.oursMs, 1)} ms per request, over the Workers Free plan's 10 ms.`);
  }
  for (const verdict of pollVerdicts(rows)) {
    const text = pollVerdictText(verdict);
    log(`  ${text}`);
    if (!verdict.met) findings.push(`${text}.`);
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------------
// What each feature of the notes' write path costs

/** Writes of each kind per measurement. */
const FEATURE_WRITES = 200;

/** The triggers of each feature (drizzle/0007, drizzle/0012), dropped one feature at a time. */
const FEATURE_TRIGGERS = {
  clock: ["notes_clock_after_insert", "notes_clock_after_update", "notes_clock_after_unnumbered_insert", "notes_clock_after_unnumbered_update", "notes_tombstone_after_delete"],
  search: ["notes_fts_after_insert", "notes_fts_after_delete", "notes_fts_after_update"],
};

/** Short notes written as the app writes them, one statement at a time: the median time and rows written of each kind. */
async function writeCosts(rt: Runtime, numbered: boolean) {
  const revision = numbered ? "coalesce((SELECT seq FROM note_clocks WHERE owner = 0), 0) + 1" : "0";
  const out = { insert: [] as number[], insertRows: [] as number[], update: [] as number[], updateRows: [] as number[], remove: [] as number[], removeRows: [] as number[] };
  const ids: unknown[] = [];
  for (let i = 0; i < FEATURE_WRITES; i++) {
    let started = performance.now();
    const inserted = await rt.timedSql(
      `INSERT INTO notes (title, content, created_at, revision) VALUES ('Feature ' || ?1, 'Written by the benchmark, short content.', 0, ${revision}) RETURNING id`,
      i,
    );
    out.insert.push(performance.now() - started);
    out.insertRows.push(inserted.rowsWritten);
    ids.push(inserted.rows[0]!.id);
    started = performance.now();
    const updated = await rt.timedSql(
      `UPDATE notes SET title = 'Patched ' || ?1, content = 'Updated by the benchmark.', revision = ${numbered ? revision.replace("owner = 0", "owner = coalesce(user_id, 0)") : "revision"} WHERE id = ?2`,
      i,
      inserted.rows[0]!.id,
    );
    out.update.push(performance.now() - started);
    out.updateRows.push(updated.rowsWritten);
  }
  for (const id of ids) {
    const started = performance.now();
    const removed = await rt.timedSql("DELETE FROM notes WHERE id = ?1", id);
    out.remove.push(performance.now() - started);
    out.removeRows.push(removed.rowsWritten);
  }
  return out;
}

/** Alternating runs per feature and state (with, without) of the through-the-app write loads. */
const FEATURE_LOAD_PAIRS = 3;

/** Requests sent one at a time to the counting build to find a write's D1 rows written. */
const FEATURE_ROW_COUNT_REQUESTS = 20;

/**
 * Each feature's cost on writes through the app under load: POST and PATCH /notes (the create-note and
 * update-note scenarios' requests) with every trigger, and without the feature's, in alternating runs;
 * the triggers are put back from their saved SQL after each run without them. Medians of requests/s.
 */
async function featureThroughput(rt: Runtime): Promise<Map<string, { withRps: number; withoutRps: number }>> {
  const byKey = new Map(scenarios().map((s) => [s.key, s]));
  const writes = [
    ["INSERT (POST)", byKey.get("create-note")!],
    ["UPDATE (PATCH)", byKey.get("update-note")!],
  ] as const;
  await ensureBaseNotes(rt);
  const saved = (await rt.sql("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")) as { name: string; sql: string }[];
  const restore = async (names: readonly string[]) => {
    for (const { name, sql } of saved) if (names.includes(name)) await rt.sql(sql);
  };
  const out = new Map<string, { withRps: number; withoutRps: number }>();
  const plan: LoadPlan = { mode: "duration", warmup: false, amount: undefined, timeout: 10 };
  for (const [, s] of writes) await load(ourUrl(rt, s), s, plan, opts.warmup);
  for (const [feature, triggers] of Object.entries(FEATURE_TRIGGERS)) {
    const rps: Record<string, { with: number[]; without: number[] }> = {};
    for (let pair = 0; pair < FEATURE_LOAD_PAIRS; pair++) {
      for (const state of pair % 2 === 0 ? (["with", "without"] as const) : (["without", "with"] as const)) {
        if (state === "without") for (const name of triggers) await rt.sql(`DROP TRIGGER IF EXISTS ${name}`);
        for (const [write, s] of writes) ((rps[write] ??= { with: [], without: [] })[state]).push((await load(ourUrl(rt, s), s, plan, opts.duration)).rps);
        if (state === "without") await restore(triggers);
      }
    }
    for (const [write] of writes) {
      const r = rps[write]!;
      out.set(`${feature} ${write}`, { withRps: median(r.with), withoutRps: median(r.without) });
      log(`  ${feature} triggers, ${write} through the app: ${fmt(median(r.with), 0)} req/s with, ${fmt(median(r.without), 0)} req/s without`);
    }
  }
  return out;
}

/**
 * The cost of each feature on writes: every feature on, then without the changes feed's clock and
 * tombstone triggers (revisions, ETags and the feed), then without the search index's too; and the
 * Idempotency-Key through the app, with every feature on. Drops triggers: runs last, on a database the bench then throws away.
 */
async function featureCosts(rt: Runtime): Promise<FeatureCost[]> {
  log("\nWhat each feature of the write path costs (through the app under load, then short notes one statement at a time)");
  const throughput = await featureThroughput(rt);
  // Before any trigger is dropped: a key's cost is measured with every feature on.
  const idempotency = await idempotencyKeyCost(rt);
  const all = await writeCosts(rt, true);
  for (const name of FEATURE_TRIGGERS.clock) await rt.sql(`DROP TRIGGER IF EXISTS ${name}`);
  const noClock = await writeCosts(rt, false);
  for (const name of FEATURE_TRIGGERS.search) await rt.sql(`DROP TRIGGER IF EXISTS ${name}`);
  const plain = await writeCosts(rt, false);
  const rows: FeatureCost[] = [];
  const add = (key: keyof typeof FEATURE_TRIGGERS, feature: string, on: typeof all, off: typeof all) => {
    for (const [write, ms, written] of [
      ["INSERT (POST)", "insert", "insertRows"],
      ["UPDATE (PATCH)", "update", "updateRows"],
      ["DELETE", "remove", "removeRows"],
    ] as const) {
      const loaded = throughput.get(`${key} ${write}`);
      rows.push({ feature, write, withMs: median(on[ms]), withoutMs: median(off[ms]), withRows: median(on[written]), withoutRows: median(off[written]), ...loaded });
    }
  };
  add("clock", "revisions, ETags, the changes feed (clock and tombstone triggers)", all, noClock);
  add("search", "search index (FTS5 triggers)", noClock, plain);
  for (const row of rows) {
    log(`  ${row.feature}, ${row.write}: ${fmt(row.withMs, 3)} ms / ${row.withRows} rows with, ${fmt(row.withoutMs, 3)} ms / ${row.withoutRows} rows without`);
  }

  if (idempotency) rows.push(idempotency);
  return rows;
}

/**
 * The Idempotency-Key: a POST /notes with a new key each time against the create-note scenario's POST
 * without one: CPU per request, D1's rows written per request (through the counting build), and requests/s
 * under load in alternating runs. Its "ms" columns are CPU.
 */
async function idempotencyKeyCost(rt: Runtime): Promise<FeatureCost | undefined> {
  const pids = workerdPids();
  if (!pids.length) return undefined;
  const without = scenarios().find((s) => s.key === "create-note")!;
  const withKey: Scenario = { ...without, request: () => ({ ...without.request(), headers: { "Idempotency-Key": randomBytes(12).toString("hex") } }) };
  const cpu = { with: [] as number[], without: [] as number[] };
  for (let rep = 0; rep < CPU_REPS; rep++) {
    cpu.with.push((await cpuPerRequest(pids, rt.urls.app, FEATURE_WRITES, withKey.request, 201, "POST with Idempotency-Key")).all);
    cpu.without.push((await cpuPerRequest(pids, rt.urls.app, FEATURE_WRITES, without.request, 201, "POST without Idempotency-Key")).all);
  }
  const rowsWritten = async (s: Scenario) => {
    const before = await d1Stats(rt.urls.counting);
    for (let i = 0; i < FEATURE_ROW_COUNT_REQUESTS; i++) await send(rt.urls.counting, s.request());
    return ((await d1Stats(rt.urls.counting)).rowsWritten - before.rowsWritten) / FEATURE_ROW_COUNT_REQUESTS;
  };
  const rps = { with: [] as number[], without: [] as number[] };
  const plan: LoadPlan = { mode: "duration", warmup: false, amount: undefined, timeout: 10 };
  await load(rt.urls.app, withKey, plan, opts.warmup);
  for (let pair = 0; pair < FEATURE_LOAD_PAIRS; pair++) {
    for (const state of pair % 2 === 0 ? (["with", "without"] as const) : (["without", "with"] as const)) {
      rps[state].push((await load(rt.urls.app, state === "with" ? withKey : without, plan, opts.duration)).rps);
    }
  }
  const cost: FeatureCost = {
    feature: "Idempotency-Key (CPU per request through the app, ms)",
    write: "POST /notes",
    withMs: median(cpu.with),
    withoutMs: median(cpu.without),
    withRows: await rowsWritten(withKey),
    withoutRows: await rowsWritten(without),
    withRps: median(rps.with),
    withoutRps: median(rps.without),
  };
  log(
    `  Idempotency-Key: ${fmt(cost.withMs, 2)} ms of CPU per POST with a key, ${fmt(cost.withoutMs, 2)} ms without; ` +
      `${fmt(cost.withRows, 1)} rows written with, ${fmt(cost.withoutRows, 1)} without; ${fmt(cost.withRps, 0)} req/s with, ${fmt(cost.withoutRps, 0)} without`,
  );
  return cost;
}

// ---------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = Date.now();
  const loadAtStart = loadavg().map((n) => Math.round(n * 100) / 100);
  const all = scenarios();
  const known = [...all.map((s) => s.key), "list-chart", "large-notes", "read-during-list", "search-indexing", "bcrypt", "cpu", "features"];
  const unknown = (opts.only ?? []).filter((key) => !known.includes(key));
  if (unknown.length) throw new Error(`unknown scenario(s) in --only: ${unknown.join(", ")}; known: ${known.join(", ")}`);
  log(`[bench] ${opts.smoke ? "smoke mode: " : ""}${opts.connections} connections, ${opts.duration} s per run, ${opts.warmup} s warm-up, ${opts.pairs} pair(s) of runs per scenario`);
  const source = sourceState();
  log(`[bench] bundling ${source} with wrangler deploy --dry-run ...`);
  const outDir = join(benchDir, ".out");
  const [app, counting]: [Bundle, Bundle] = await Promise.all([
    buildBundle(root, join(outDir, "app"), undefined, opts.profile ? false : undefined),
    buildBundle(root, join(outDir, "counting"), "bench/counting-entry.ts", opts.profile ? false : undefined),
  ]);
  log(`[bench] bundle ${relative(root, app.mainPath)}: ${(app.bytes / 1024).toFixed(2)} KiB, gzip ${(app.gzipBytes / 1024).toFixed(2)} KiB`);

  const rt = await startRuntime({
    root,
    app,
    counting,
    floorPath: join(benchDir, "floor-worker.js"),
    floorAuthPath: join(benchDir, "floor-auth-worker.js"),
    vars: { JWT_SECRET_KEY: randomBytes(32).toString("base64url"), RATE_LIMITS: "off", BCRYPT_COST: String(BCRYPT_COST) },
    inspectorPort: opts.profile ? await freePort() : undefined,
  });
  runtime = rt;
  workerd = workerdPids();
  log(`[bench] workerd up: ours ${rt.urls.app}, counting ${rt.urls.counting}, floor ${rt.urls.floor}; migrations: ${rt.migrations.join(", ")}`);

  const results: ScenarioResult[] = [];
  const chart: ChartPoint[] = [];
  const listKeys = new Set(opts.listSizes.map((size) => `list-${size}`));
  for (const s of all.filter((s) => !listKeys.has(s.key) && s.key !== "register" && s.key !== "login")) {
    if (wants(s.key)) results.push(await runScenario(rt, s));
  }
  // The list sizes in ascending order, the two measured against the floor among them.
  const sizes = [...new Set([...opts.listSizes, ...opts.chartSizes])].sort((a, b) => a - b);
  for (const size of sizes) {
    const paired = all.find((s) => s.key === `list-${size}`);
    if (paired && wants(paired.key)) {
      const r = await runScenario(rt, paired);
      results.push(r);
      if (opts.chartSizes.includes(size)) {
        const o = r.oursSummary;
        chart.push({ size, p50: o.p50, p99: o.p99, rps: o.rps, requests: o.requests, connections: opts.connections, mode: "duration" });
      }
    } else if (opts.chartSizes.includes(size) && wants("list-chart")) {
      const point = await chartPoint(rt, size);
      if (point) chart.push(point);
    }
  }
  // The reads during lists stream the large notes' lists: they come right after those are seeded.
  let large: LargeListPoint[] = [];
  let readsDuringList: ReadDuringList | undefined;
  if (wants("large-notes") || wants("read-during-list")) {
    large = await largeNotes(rt);
    if (wants("read-during-list")) readsDuringList = await readDuringList(rt);
  }
  if (wants("search-indexing")) await searchIndexing(rt);
  for (const s of all.filter((s) => s.key === "register" || s.key === "login")) {
    if (wants(s.key)) results.push(await runScenario(rt, s));
  }

  const cpuRows = wants("cpu") ? await cpuTimes(rt) : [];

  let bcryptTimings: BcryptTimings | undefined;
  if (wants("bcrypt")) bcryptTimings = await timeBcrypt(rt, await seedLoginAccount(rt));
  // Last: it drops triggers.
  const featureRows = wants("features") ? await featureCosts(rt) : [];

  // Present results in a stable order: the scenario list's.
  const order = new Map(all.map((s, i) => [s.key, i]));
  results.sort((a, b) => (order.get(a.key) ?? 99) - (order.get(b.key) ?? 99));

  const b = bcryptTimings;
  if (b) {
    if (b.loginOverCompare !== undefined && !(b.loginOverCompare <= 1.1)) {
      findings.push(`POST /auth/login takes ${fmt(b.loginOverCompare, 2)}× one bcrypt compare (p50 ${fmt(b.loginP50)} ms vs ${fmt(b.compareRequestP50)} ms), target ≤ 1.1×.`);
    }
    if (b.hashMs > 10 || b.compareMs > 10) {
      findings.push(
        `bcrypt at cost ${b.cost} needs ${fmt(b.hashMs)} ms (hash) and ${fmt(b.compareMs)} ms (compare) of CPU inside workerd: over the Workers Free plan's 10 ms per request, well within Paid's 30 s. Register and login need the Paid plan at this cost.`,
      );
    }
  }
  if (app.gzipBytes > BUNDLE_GZIP_TARGET) {
    findings.push(`The deployable bundle is ${(app.gzipBytes / 1024).toFixed(1)} KiB gzip, target ≤ ${BUNDLE_GZIP_TARGET / 1024} KiB.`);
  }
  if (rt.logs.errors.length) findings.push(`The workers logged ${rt.logs.byLevel.error ?? 0} error line(s), e.g. ${rt.logs.errors[0]}`);

  const cpu = cpus()[0]?.model ?? "unknown CPU";
  const report: Results = {
    meta: {
      command: opts.smoke ? "npm run bench:smoke" : "npm run bench",
      date: new Date().toISOString(),
      source,
      machine: `${availableParallelism()} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${process.platform}/${process.arch}`,
      node: process.version.replace(/^v/, ""),
      wrangler: versionOf("wrangler"),
      miniflare: versionOf("miniflare"),
      workerd: versionOf("workerd"),
      autocannon: versionOf("autocannon"),
      options: { ...opts, outDir: relative(root, opts.outDir) || "." },
      loadAverage: { atStart: loadAtStart, atEnd: loadavg().map((n) => Math.round(n * 100) / 100) },
      countRequests: opts.countRequests,
      settings: rt.settings,
      migrations: rt.migrations,
      seconds: Math.round((Date.now() - started) / 1000),
    },
    bundle: { bytes: app.bytes, gzipBytes: app.gzipBytes, modules: app.modules.map((m) => relative(root, m)) },
    scenarios: results,
    chart,
    large,
    readsDuringList,
    bcrypt: bcryptTimings,
    cpu: cpuRows,
    features: featureRows,
    logs: rt.logs,
    findings,
    observations,
    failures,
  };

  closeConnections();
  await cleanup();

  log(`\n${textTable(report)}\n`);
  for (const line of [...bundleLines(report), ...bcryptLines(report), ...cpuLines(report), ...featureLines(report)]) log(line);
  for (const line of largeLines(report)) log(line);
  if (chart.length) log(`GET /notes latency by list size: ${chart.map((p) => `${p.size}: p50 ${fmt(p.p50)} / p99 ${fmt(p.p99)} ms`).join("; ")}`);
  if (observations.length) log(`\nObservations:\n${observations.map((o) => `- ${o}`).join("\n")}`);
  log(findings.length ? `\nFindings:\n${findings.map((f) => `- ${f}`).join("\n")}` : `\nFindings: none${failures.length ? "" : ", every target met"}.`);

  mkdirSync(opts.outDir, { recursive: true });
  writeFileSync(join(opts.outDir, "results.json"), JSON.stringify(report, null, 2) + "\n");
  writeFileSync(join(opts.outDir, "results.md"), markdown(report));
  writeFileSync(join(opts.outDir, "list-latency.svg"), latencySvg(chart, opts.connections));
  log(`\n[bench] wrote ${["results.md", "results.json", "list-latency.svg"].map((f) => relative(root, join(opts.outDir, f))).join(", ")} in ${report.meta.seconds} s`);

  if (failures.length) {
    console.error(`\n[bench] FAILED:\n${failures.map((f) => `- ${f}`).join("\n")}`);
    return 1;
  }
  return 0;
}

let code = 1;
try {
  code = await main();
} catch (err) {
  console.error("[bench] error:", err);
  code = 1;
} finally {
  await cleanup();
}
clearTimeout(watchdog);
process.exit(code);
