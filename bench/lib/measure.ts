/**
 * What a scenario is, and the two kinds most scenarios are: throughput under load against a floor
 * (`throughput`), and CPU time per request one request at a time (`cpu`). A scenario returns rows of a
 * table; the report prints each table once, with the rows of every scenario that filled it.
 */
import { cpuNanoseconds } from "./cpu.ts";
import {
  median,
  runLoad,
  send,
  type RequestFactory,
  type RequestSpec,
  type RunStats,
  type SingleResult,
} from "./load.ts";
import type { Options } from "./options.ts";
import type { Runtime, WorkerName } from "./runtime.ts";

export interface Table {
  title: string;
  /** How the figures were taken, printed above the table. */
  about: string;
  columns: string[];
}

export interface Row {
  table: Table;
  key: string;
  cells: string[];
  /** Every measurement behind the cells, for results.json. */
  data: unknown;
}

export interface Context {
  rt: Runtime;
  opts: Options;
  /** workerd's pids (bench/lib/cpu.ts); empty without /proc. */
  pids: number[];
  log(line: string): void;
  /** A wrong answer or an error: the run goes on, and exits non-zero at the end. */
  fail(problem: string): void;
}

export interface Scenario {
  key: string;
  run(ctx: Context): Promise<Row[]>;
}

export const fmt = (n: number | undefined, digits = 2) =>
  n !== undefined && Number.isFinite(n)
    ? n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : "-";
/** "0.97 (0.74–1.08)": the median and the lowest and highest value. */
export const spread = (values: number[], digits = 2) =>
  values.length
    ? `${fmt(median(values), digits)} (${fmt(Math.min(...values), digits)}–${fmt(Math.max(...values), digits)})`
    : "-";

// Throughput under load, ours against a floor

export const THROUGHPUT: Table = {
  title: "Throughput under load",
  about:
    "autocannon over loopback; per scenario a warm-up of each side, then pairs of runs, one of ours and one of the floor, " +
    "the order alternating from pair to pair. req/s and latencies are medians over the runs; ours/floor is our req/s over " +
    "the floor's in each pair: the median over the pairs, and the lowest and highest pair. D1 round trips are counted by " +
    'bench/counting-entry.ts over sequential requests ("1 + 2 streamed": before the answer, and while a list\'s body streams).',
  columns: [
    "Scenario",
    "ours req/s",
    "floor req/s",
    "ours p50 / p99 ms",
    "floor p50 / p99 ms",
    "D1 round trips",
    "ours/floor (lowest–highest pair)",
  ],
};

export interface ThroughputSpec {
  key: string;
  label: string;
  /** Against our NOTES_AUTH=required build and the same-work floor, rather than the public build and the bare floor. */
  private?: boolean;
  /** 200 unless given. */
  expectStatus?: number;
  setup?: (ctx: Context) => Promise<void>;
  request: RequestFactory;
  /** Our answer against the floor's for the same request: the same JSON (the default), or the same keys and types. */
  compare?: "equal" | "shape";
}

type Checked = ThroughputSpec & Required<Pick<ThroughputSpec, "expectStatus" | "compare">>;

function shapeOf(body: string): string {
  const value = JSON.parse(body) as unknown;
  const one: unknown = Array.isArray(value) ? (value as unknown[])[0] : value;
  return typeof one === "object" && one !== null
    ? Object.entries(one)
        .map(([k, v]) => `${k}:${typeof v}`)
        .join(",")
    : typeof one;
}

/** One request to ours and to the floor: the statuses, and the JSON compared. */
async function checkAnswers(ctx: Context, s: Checked, ours: string, floor: string): Promise<void> {
  const spec = s.request();
  const a = await send(ours, spec);
  const b = await send(floor, s.compare === "equal" ? spec : s.request());
  for (const [who, answer] of [
    ["ours", a],
    ["the floor", b],
  ] as const) {
    if (answer.status !== s.expectStatus)
      ctx.fail(`${s.label}: ${who} answered ${answer.status}: ${answer.body.slice(0, 200)}`);
  }
  if (a.status !== s.expectStatus || b.status !== s.expectStatus) return;
  const same =
    s.compare === "equal"
      ? JSON.stringify(JSON.parse(a.body)) === JSON.stringify(JSON.parse(b.body))
      : shapeOf(a.body) === shapeOf(b.body);
  if (!same)
    ctx.fail(
      `${s.label}: ours and the floor answered different JSON: ${a.body.slice(0, 150)} vs ${b.body.slice(0, 150)}`,
    );
}

/** D1 round trips per request, from sequential requests to the counting build: before the answer, and late. */
async function countRoundTrips(ctx: Context, s: Checked, url: string): Promise<{ before: number[]; late: number }> {
  const stats = async () =>
    JSON.parse((await send(url, { method: "GET", path: "/__bench/d1-stats" })).body) as { late: number };
  const start = await stats();
  const before: number[] = [];
  const requests = ctx.opts.smoke ? 3 : 10;
  for (let i = 0; i < requests; i++) {
    const answer = await send(url, s.request());
    if (answer.status !== s.expectStatus) ctx.fail(`${s.label}: the counting build answered ${answer.status}`);
    before.push(Number(answer.headers["x-bench-d1-queries"]));
  }
  return { before, late: ((await stats()).late - start.late) / requests };
}

export function throughput(spec: ThroughputSpec): Scenario {
  const s: Checked = { expectStatus: 200, compare: "equal", ...spec };
  return {
    key: s.key,
    async run(ctx) {
      const { rt, opts } = ctx;
      await s.setup?.(ctx);
      const urls = {
        ours: rt.urls[s.private ? "appPrivate" : "app"],
        floor: rt.urls[s.private ? "floorAuth" : "floor"],
      };
      await checkAnswers(ctx, s, urls.ours, urls.floor);
      const d1 = await countRoundTrips(ctx, s, rt.urls[s.private ? "countingPrivate" : "counting"]);
      const first = Math.max(...d1.before);
      const d1Cell = d1.late ? `${fmt(first + d1.late, 0)} = ${first} + ${fmt(d1.late, 0)} streamed` : String(first);
      ctx.log(`  D1 round trips per request: ${d1Cell}`);

      const load = (who: "ours" | "floor", seconds: number) =>
        runLoad(urls[who], opts.connections, seconds, s.request, s.expectStatus);
      await load("ours", opts.warmup);
      await load("floor", opts.warmup);
      const runs: Record<"ours" | "floor", RunStats[]> = { ours: [], floor: [] };
      for (let pair = 1; pair <= opts.pairs; pair++) {
        // Whichever side runs second meets the machine's drift (a test suite starting) as often as the other.
        for (const who of pair % 2 ? (["ours", "floor"] as const) : (["floor", "ours"] as const)) {
          const run = await load(who, opts.duration);
          runs[who].push(run);
          ctx.log(
            `  ${who.padEnd(5)} ${pair}/${opts.pairs} ${fmt(run.rps, 1).padStart(9)} req/s  p50 ${fmt(run.p50).padStart(8)} ms  p99 ${fmt(run.p99).padStart(8)} ms`,
          );
          if (run.errors || run.unexpected)
            ctx.fail(
              `${s.label}, ${who}: ${run.errors} errors, ${run.unexpected} answers other than ${s.expectStatus}`,
            );
        }
      }
      const ratios = runs.ours.map((o, i) => o.rps / runs.floor[i]!.rps);
      ctx.log(`  ours/floor: ${spread(ratios)}`);
      const latency = (r: RunStats[]) => `${fmt(median(r.map((x) => x.p50)))} / ${fmt(median(r.map((x) => x.p99)))}`;
      const rps = (r: RunStats[]) => fmt(median(r.map((x) => x.rps)), 1);
      return [
        {
          table: THROUGHPUT,
          key: s.key,
          cells: [
            s.label,
            rps(runs.ours),
            rps(runs.floor),
            latency(runs.ours),
            latency(runs.floor),
            d1Cell,
            spread(ratios),
          ],
          data: { ...runs, ratios, d1 },
        },
      ];
    },
  };
}

// CPU time per request, one request at a time

export const CPU: Table = {
  title: "CPU time per request",
  about:
    "workerd's CPU (all threads, /proc) over a fixed number of requests sent one at a time, per request, minus an empty " +
    "worker's per request; three repetitions, ours, the floor and the empty worker taking turns: the median and the lowest " +
    "and highest repetition. Local D1 runs in the same process, so each figure includes SQLite's work: an upper bound.",
  columns: ["Endpoint", "requests × repetitions", "ours ms (lowest–highest)", "floor ms (lowest–highest)"],
};

export const CPU_REPS = 3;
export const EMPTY_REQUESTS = 200;

export interface CpuSpec {
  key: string;
  label: string;
  /** Requests per repetition (a twentieth in smoke mode). */
  requests: number;
  /** Our public build unless given, and the floor doing the same work, where there is one. */
  ours?: WorkerName;
  floor?: WorkerName;
  /** 200 unless given. */
  expectStatus?: number;
  setup?: (ctx: Context) => Promise<void>;
  /** The next request: one at a time, so it may follow from the previous answer (a refresh chain). */
  next: (previous: SingleResult | undefined) => RequestSpec;
}

/** Milliseconds of workerd CPU per request over `count` requests in a row. */
export async function cpuPerRequest(
  ctx: Context,
  worker: WorkerName,
  count: number,
  c: { label: string; expectStatus: number; next: CpuSpec["next"] },
): Promise<number> {
  let previous: SingleResult | undefined;
  const before = cpuNanoseconds(ctx.pids);
  for (let i = 0; i < count; i++) {
    previous = await send(ctx.rt.urls[worker], c.next(previous));
    if (previous.status !== c.expectStatus) {
      ctx.fail(`CPU time, ${c.label} (${worker}): answered ${previous.status}: ${previous.body.slice(0, 200)}`);
      break;
    }
  }
  return (cpuNanoseconds(ctx.pids) - before) / count / 1e6;
}

export const EMPTY = {
  label: "empty worker",
  expectStatus: 200,
  next: (): RequestSpec => ({ method: "GET", path: "/" }),
};

export function cpu(spec: CpuSpec): Scenario {
  const c = { ours: "app", expectStatus: 200, ...spec } as const;
  return {
    key: `cpu:${c.key}`,
    async run(ctx) {
      const requests = ctx.opts.smoke ? Math.max(2, Math.ceil(c.requests / 20)) : c.requests;
      const row = (cells: string[], data: unknown): Row[] => [
        { table: CPU, key: `cpu:${c.key}`, cells: [c.label, ...cells], data },
      ];
      if (!ctx.pids.length) return row(["-", "not measured: no workerd found in /proc", "-"], undefined);
      await c.setup?.(ctx);
      const ours: number[] = [];
      const floor: number[] = [];
      for (let rep = 0; rep < CPU_REPS; rep++) {
        const baseline = await cpuPerRequest(ctx, "empty", EMPTY_REQUESTS, EMPTY);
        ours.push((await cpuPerRequest(ctx, c.ours, requests, c)) - baseline);
        if (c.floor) floor.push((await cpuPerRequest(ctx, c.floor, requests, c)) - baseline);
      }
      ctx.log(`  ${c.label}: ours ${spread(ours)} ms${c.floor ? `, floor ${spread(floor)} ms` : ""}`);
      return row([`${requests} × ${CPU_REPS}`, spread(ours), c.floor ? spread(floor) : "-"], { requests, ours, floor });
    },
  };
}
