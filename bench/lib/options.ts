/**
 * Settings of one benchmark run, from flags (`npm run bench -- --duration=5`) or environment variables
 * (`BENCH_DURATION=5 npm run bench`); flags win. `--smoke` (or BENCH_SMOKE=1) switches every default
 * to the quick mode: 1 s per scenario, 2 connections, tiny seeds, one pair.
 */
import { parseArgs } from "node:util";

export interface Options {
  smoke: boolean;
  /** Seconds of load per measured run. */
  duration: number;
  /** Seconds of load before the measured runs of a scenario, per target, not measured. */
  warmup: number;
  connections: number;
  /**
   * Measured pairs per scenario: with a floor, one run of ours and one of the floor each, the order
   * alternating from pair to pair (ours first, then the floor first, ...); without, one run of ours.
   */
  pairs: number;
  /** Notes seeded for the single-note scenarios (GET and PATCH /notes/{id}). */
  baseNotes: number;
  /** The two list sizes of the GET /notes scenarios, measured against the floor. */
  listSizes: [number, number];
  /** The list sizes of the latency chart (the two above are reused, the others measured once). */
  chartSizes: number[];
  /** Numbers of 1 MiB notes listed by the large-notes scenario (time per MiB). */
  largeCounts: number[];
  /** Whole-list requests per large-notes size, one at a time (the median is reported). */
  largeReps: number;
  /** Sequential requests per scenario to the counting build, for D1 queries per request. */
  countRequests: number;
  /** Login and one-compare requests, one at a time and interleaved, for login against one compare. */
  loginPairs: number;
  /** Repetitions of each bcrypt timing probe. */
  bcryptReps: number;
  /** Scenario keys to run (default: all). */
  only: string[] | undefined;
  /** Where results.md, results.json and list-latency.svg go. */
  outDir: string;
  /**
   * Also profile each measured scenario's isolates (ours and the floor's) under load, with V8's sampler
   * through workerd's inspector: the bundles are then built unminified, so that functions keep their names.
   */
  profile: boolean;
}

const USAGE = `npm run bench [-- options]      (every option also as an environment variable)
  --smoke                 quick mode: 1 s, 2 connections, tiny seeds; fails on errors   BENCH_SMOKE=1
  --duration=SECONDS      load per measured run (default 10, smoke 1)                  BENCH_DURATION
  --warmup=SECONDS        warm-up per scenario and target (default 2, smoke 0.5)       BENCH_WARMUP
  --connections=N         concurrent connections (default 32, smoke 2)                 BENCH_CONNECTIONS
  --pairs=N               measured pairs of runs, ours and the floor (default 5, smoke 1)   BENCH_PAIRS
  --chart-sizes=A,B,...   list sizes of the latency chart (default 100,1000,10000,100000)  BENCH_CHART_SIZES
  --large=A,B,...         numbers of 1 MiB notes to list (default 40,80,160,320)      BENCH_LARGE
  --only=KEY,KEY          run only these scenarios (keys as in results.json)           BENCH_ONLY
  --out=DIR               where results go (default bench/, smoke: bench/.out/smoke)   BENCH_OUT
  --profile               also take a CPU profile of ours and the floor per scenario   BENCH_PROFILE=1
                          (unminified bundles; profiles and summaries in <out>/profiles)`;

function positive(name: string, raw: string | undefined, fallback: number, integer: boolean): number {
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be a positive ${integer ? "integer" : "number"}, got ${JSON.stringify(raw)}\n\n${USAGE}`);
  }
  return value;
}

function sizes(name: string, raw: string | undefined, fallback: number[]): number[] {
  if (raw === undefined || raw.trim() === "") return fallback;
  return raw.split(",").map((part) => positive(name, part, 0, true));
}

export function readOptions(argv: string[], env: NodeJS.ProcessEnv, benchDir: string): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      smoke: { type: "boolean" },
      duration: { type: "string" },
      warmup: { type: "string" },
      connections: { type: "string" },
      pairs: { type: "string" },
      "chart-sizes": { type: "string" },
      large: { type: "string" },
      only: { type: "string" },
      out: { type: "string" },
      profile: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const smoke = values.smoke === true || env.BENCH_SMOKE === "1" || env.BENCH_SMOKE === "true";
  const listSizes: [number, number] = smoke ? [20, 1_200] : [100, 10_000];
  const only = values.only ?? env.BENCH_ONLY;
  const profile = values.profile === true || env.BENCH_PROFILE === "1" || env.BENCH_PROFILE === "true";
  return {
    smoke,
    duration: positive("duration", values.duration ?? env.BENCH_DURATION, smoke ? 1 : 10, false),
    warmup: positive("warmup", values.warmup ?? env.BENCH_WARMUP, smoke ? 0.5 : 2, false),
    connections: positive("connections", values.connections ?? env.BENCH_CONNECTIONS, smoke ? 2 : 32, true),
    pairs: positive("pairs", values.pairs ?? env.BENCH_PAIRS, smoke ? 1 : 5, true),
    baseNotes: smoke ? 20 : 1_000,
    listSizes,
    chartSizes: sizes("chart-sizes", values["chart-sizes"] ?? env.BENCH_CHART_SIZES, smoke ? [20, 1_200] : [100, 1_000, 10_000, 100_000]),
    largeCounts: sizes("large", values.large ?? env.BENCH_LARGE, smoke ? [2, 4] : [40, 80, 160, 320]),
    largeReps: smoke ? 1 : 3,
    countRequests: smoke ? 3 : 10,
    loginPairs: smoke ? 6 : 100,
    bcryptReps: smoke ? 2 : 7,
    only: only ? only.split(",").map((key) => key.trim()).filter(Boolean) : undefined,
    // A profiled run's figures come from unminified bundles under a profiler: never the committed results.
    outDir: values.out ?? env.BENCH_OUT ?? (smoke ? `${benchDir}/.out/smoke` : profile ? `${benchDir}/.out/profile` : benchDir),
    profile,
  };
}
