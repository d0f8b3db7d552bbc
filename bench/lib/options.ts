/** Settings of one run, from flags: `npm run bench -- --duration=5 --pairs=9`. */
import { parseArgs } from "node:util";

export interface Options {
  smoke: boolean;
  /** Seconds of load per measured run, and of warm-up per worker before a scenario's runs. */
  duration: number;
  warmup: number;
  connections: number;
  /** Measured pairs per throughput scenario: one run of ours and one of the floor each, the order alternating. */
  pairs: number;
  /** Notes seeded for the single-note scenarios, and the two list sizes measured against the floor. */
  baseNotes: number;
  listSizes: [number, number];
  /** Scenario keys to run (a key, or a prefix before ":", such as `cpu`); default all. */
  only: string[] | undefined;
  /** Where results.md and results.json go (smoke.md and smoke.json in smoke mode). */
  outDir: string;
}

export const USAGE = `npm run bench [-- options]
  --smoke              quick check: 1 s runs, 2 connections, tiny seeds, one pair; fails on any error
  --duration=SECONDS   load per measured run (default 10, smoke 1)
  --warmup=SECONDS     warm-up per scenario and worker (default 2, smoke 0.5)
  --connections=N      concurrent connections (default 32, smoke 2)
  --pairs=N            measured pairs of runs, ours and the floor (default 5, smoke 1)
  --only=KEY,KEY       only these scenarios (keys in bench/README.md; "cpu" for every CPU row)
  --out=DIR            where results go (default bench/.results)`;

function positive(name: string, raw: string | undefined, fallback: number, integer: boolean): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new Error(
      `--${name} must be a positive ${integer ? "integer" : "number"}, got ${JSON.stringify(raw)}\n\n${USAGE}`,
    );
  }
  return value;
}

export function readOptions(argv: string[], benchDir: string): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      smoke: { type: "boolean" },
      duration: { type: "string" },
      warmup: { type: "string" },
      connections: { type: "string" },
      pairs: { type: "string" },
      only: { type: "string" },
      out: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const smoke = values.smoke === true;
  return {
    smoke,
    duration: positive("duration", values.duration, smoke ? 1 : 10, false),
    warmup: positive("warmup", values.warmup, smoke ? 0.5 : 2, false),
    connections: positive("connections", values.connections, smoke ? 2 : 32, true),
    pairs: positive("pairs", values.pairs, smoke ? 1 : 5, true),
    baseNotes: smoke ? 20 : 1_000,
    listSizes: smoke ? [20, 1_200] : [100, 10_000],
    only: values.only
      ?.split(",")
      .map((key) => key.trim())
      .filter(Boolean),
    outDir: values.out ?? `${benchDir}/.results`,
  };
}
