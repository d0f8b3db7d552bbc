/** The results: a text table for the terminal, results.md, results.json and the list-latency SVG chart. */
import { median, type RunStats } from "./load.ts";
import type { Options } from "./options.ts";

export interface Summary {
  /** Medians over the measured runs. */
  rps: number;
  p50: number;
  p99: number;
  /** Sums over the measured runs. */
  requests: number;
  errors: number;
  non2xx: number;
  unexpected: number;
}

export interface D1Count {
  /** Round trips per request, from the counting build's totals (streamed or late ones included). */
  perRequest: number;
  /** The X-Bench-D1-Queries header of each counted request (round trips before the response). */
  header: number[];
  /** Round trips after the response was returned, in total over the counted requests. */
  late: number;
  requests: number;
  /** The most per request the issue allows, or undefined where it sets none. */
  target: number | undefined;
  /**
   * What the target applies to: every round trip, or (for the streamed list, whose later chunks the
   * issue sets aside) those made before the response, as the header shows them.
   */
  targetBasis: "all round trips" | "before the response";
  meetsTarget: boolean | undefined;
  /** The round trips of the last counted request, method and SQL. */
  statements: string[];
}

export interface ScenarioResult {
  key: string;
  title: string;
  detail: string;
  expectStatus: number;
  ours: RunStats[];
  floor: RunStats[] | undefined;
  oursSummary: Summary;
  floorSummary: Summary | undefined;
  /** Ours / floor throughput per pair of runs, their median and their spread. */
  ratios: number[] | undefined;
  ratio: number | undefined;
  ratioSpread: { min: number; max: number } | undefined;
  /** The least median ratio the issue asks for, where it sets one. */
  ratioTarget: number | undefined;
  d1: D1Count | undefined;
  /** Whether our answer and the floor's had the same JSON for the same request (where comparable). */
  sameJsonAsFloor: boolean | undefined;
  /** Anything that went wrong outside the load runs (wrong status in a check request, ...). */
  problems: string[];
}

export interface ChartPoint {
  size: number;
  p50: number;
  p99: number;
  rps: number;
  requests: number;
  connections: number;
  mode: string;
}

/** GET /notes over notes of 1 MiB, one request at a time. */
export interface LargeListPoint {
  notes: number;
  /** Size of the answer. */
  mib: number;
  bytes: number;
  /** Each timed request, and their median. */
  ms: number[];
  medianMs: number;
  msPerMiB: number;
  /** Round trips of one request to the counting build, and the longest of them in milliseconds. */
  d1RoundTrips: number | undefined;
  slowestD1Ms: number | undefined;
}

/** One reader's GET /notes/{id} runs: alone, then while the lists stream, a pair per round. */
export interface ReadPairs {
  pairs: { idle: RunStats; during: RunStats }[];
  /** Medians over the pairs of the p50 and the p99 during the lists over alone. */
  p50Ratio: number;
  p99Ratio: number;
}

/** Per pair, a latency while the lists stream over the same latency alone. */
function duringOverAlone(pairs: ReadPairs["pairs"], pick: (run: RunStats) => number): number[] {
  return pairs.map((p) => pick(p.during) / pick(p.idle));
}

export function readPairs(pairs: ReadPairs["pairs"]): ReadPairs {
  return {
    pairs,
    p50Ratio: median(duringOverAlone(pairs, (run) => run.p50)),
    p99Ratio: median(duringOverAlone(pairs, (run) => run.p99)),
  };
}

/** A reader's median ratio of during over alone, and the lowest and highest pair's: "5.2× (3.1–9.8×)". */
function ratioAndRange(reader: ReadPairs, pick: (run: RunStats) => number): string {
  const ratios = duringOverAlone(reader.pairs, pick);
  return `${fmt(median(ratios), 1)}× (${fmt(Math.min(...ratios), 1)}–${fmt(Math.max(...ratios), 1)}×)`;
}

/** GET /notes/{id} alone, and while whole lists of the large notes stream. */
export interface ReadDuringList {
  connections: number;
  lists: number;
  listNotes: number;
  listMiB: number;
  /** Ours, in the workerd that streams the lists. */
  ours: ReadPairs;
  /** The floor worker: another isolate reading the same database, alone and during our lists. */
  floor: ReadPairs;
  /**
   * Ours in a second workerd process on a copy of the database (production's shape: another isolate's
   * thread, a read replica), alone and while the lists stream from the first process.
   */
  replica: ReadPairs;
  /** Lists that completed while the first process's reads were measured, and their times. */
  listsCompleted: number;
  listMs: number[];
  /** Lists that completed while the second process's reads were measured. */
  replicaListsCompleted: number;
}

export interface BcryptTimings {
  cost: number;
  /** Milliseconds of one operation inside workerd (difference between n=1 and n=0 requests). */
  hashMs: number;
  compareMs: number;
  hashSamples: { n0: number[]; n1: number[] };
  compareSamples: { n0: number[]; n1: number[] };
  /** Sequential, interleaved: login and a request doing exactly one compare, milliseconds each. */
  loginP50: number | undefined;
  compareRequestP50: number | undefined;
  /** loginP50 / compareRequestP50, the figure set against the 1.1 target. */
  loginOverCompare: number | undefined;
  /** The median of login / compare over the pairs, for comparison. */
  pairRatioMedian: number | undefined;
  loginMs: number[];
  compareRequestMs: number[];
}

/** CPU time per request of one endpoint, one request at a time (see bench/lib/cpu.ts). */
export interface CpuRow {
  key: string;
  label: string;
  /** Requests per repetition. */
  requests: number;
  /** Milliseconds of workerd CPU per request, minus an empty worker's: the median over the repetitions. */
  oursMs: number;
  spread: { min: number; max: number };
  /** The same for the floor doing the same work, where there is one. */
  floorMs?: number;
  /** The same two on workerd's main thread alone (bench/lib/cpu.ts): what throughput under load waits on. */
  oursMainMs: number;
  floorMainMs?: number;
  /** Why a row has no figure (a feature not built yet). */
  skipped?: string;
}

/** What one feature of the notes' write path costs per write (see the bench's featureCosts). */
export interface FeatureCost {
  feature: string;
  write: string;
  /** Statement time from Node, milliseconds, median: with the feature and without it. */
  withMs: number;
  withoutMs: number;
  /** Rows written per statement (meta.rows_written), with and without. */
  withRows: number;
  withoutRows: number;
  /** The same write through the app under load (POST or PATCH /notes), requests/s with and without: medians of alternating runs. */
  withRps?: number;
  withoutRps?: number;
}

export interface BundleInfo {
  bytes: number;
  gzipBytes: number;
  modules: string[];
}

export interface Meta {
  command: string;
  date: string;
  /** The commit bundled, and whether src/ had uncommitted changes. */
  source: string;
  machine: string;
  node: string;
  wrangler: string;
  miniflare: string;
  workerd: string;
  autocannon: string;
  options: Omit<Options, "outDir"> & { outDir: string };
  loadAverage: { atStart: number[]; atEnd: number[] };
  countRequests: number;
  settings: Record<string, unknown>;
  migrations: string[];
  seconds: number;
}

export interface Results {
  meta: Meta;
  bundle: BundleInfo;
  scenarios: ScenarioResult[];
  chart: ChartPoint[];
  large: LargeListPoint[];
  readsDuringList: ReadDuringList | undefined;
  bcrypt: BcryptTimings | undefined;
  cpu: CpuRow[];
  features: FeatureCost[];
  logs: { byLevel: Record<string, number>; errors: string[] };
  /** Targets missed and limits crossed. */
  findings: string[];
  /** Worth knowing, not a miss. */
  observations: string[];
  failures: string[];
}

const FREE_CPU_MS = 10;
const PAID_CPU_MS = 30_000;
const FREE_BUNDLE_GZIP = 3 * 1024 * 1024;
const PAID_BUNDLE_GZIP = 10 * 1024 * 1024;

export function summarize(runs: RunStats[]): Summary {
  const med = (pick: (r: RunStats) => number) => {
    const values = runs.map(pick).filter(Number.isFinite).sort((a, b) => a - b);
    if (values.length === 0) return Number.NaN;
    const mid = values.length >> 1;
    return values.length % 2 ? values[mid]! : (values[mid - 1]! + values[mid]!) / 2;
  };
  const sum = (pick: (r: RunStats) => number) => runs.reduce((total, r) => total + pick(r), 0);
  return {
    rps: med((r) => r.rps),
    p50: med((r) => r.p50),
    p99: med((r) => r.p99),
    requests: sum((r) => r.requests),
    errors: sum((r) => r.errors),
    non2xx: sum((r) => r.non2xx),
    unexpected: sum((r) => r.unexpected),
  };
}

function fmt(value: number | undefined, digits: number): string {
  if (value === undefined || !Number.isFinite(value)) return "-";
  return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export const kib = (bytes: number) => `${fmt(bytes / 1024, 2)} KiB`;

function d1Cell(d1: D1Count | undefined): string {
  if (!d1) return "-";
  const number = (n: number) => fmt(n, Number.isInteger(n) ? 0 : 2);
  const before = Math.max(...d1.header);
  const value = d1.late ? `${number(d1.perRequest)} = ${number(before)} + ${number(d1.late / d1.requests)} streamed` : number(d1.perRequest);
  if (d1.target === undefined) return value;
  const basis = d1.targetBasis === "before the response" ? " first" : "";
  return `${value} (≤ ${d1.target}${basis}: ${d1.meetsTarget ? "met" : "MISSED"})`;
}

function ratioCell(s: ScenarioResult): string {
  if (s.ratio === undefined || !s.ratioSpread) return "-";
  const target = s.ratioTarget === undefined ? "" : ` (≥ ${s.ratioTarget}: ${s.ratio >= s.ratioTarget ? "met" : "MISSED"})`;
  return `${fmt(s.ratio, 2)} (${fmt(s.ratioSpread.min, 2)}–${fmt(s.ratioSpread.max, 2)})${target}`;
}

interface Row {
  scenario: string;
  worker: string;
  rps: string;
  p50: string;
  p99: string;
  errors: string;
  non2xx: string;
  d1: string;
  ratio: string;
}

const HEADINGS: Row = {
  scenario: "Scenario",
  worker: "Worker",
  rps: "req/s",
  p50: "p50 ms",
  p99: "p99 ms",
  errors: "errors",
  non2xx: "non-2xx",
  d1: "D1 queries/req",
  ratio: "ours/floor: median (lowest–highest pair)",
};

function rows(results: Results): Row[] {
  const out: Row[] = [];
  for (const s of results.scenarios) {
    const name = s.detail ? `${s.title} (${s.detail})` : s.title;
    const o = s.oursSummary;
    out.push({
      scenario: name,
      worker: "ours",
      rps: fmt(o.rps, 1),
      p50: fmt(o.p50, 2),
      p99: fmt(o.p99, 2),
      errors: String(o.errors),
      non2xx: s.expectStatus === 404 ? `${o.non2xx} (404 expected)` : String(o.non2xx),
      d1: d1Cell(s.d1),
      ratio: ratioCell(s),
    });
    if (s.floorSummary) {
      const f = s.floorSummary;
      out.push({
        scenario: "",
        worker: "floor",
        rps: fmt(f.rps, 1),
        p50: fmt(f.p50, 2),
        p99: fmt(f.p99, 2),
        errors: String(f.errors),
        non2xx: String(f.non2xx),
        d1: "1 (by construction)",
        ratio: "",
      });
    }
  }
  return out;
}

const KEYS = Object.keys(HEADINGS) as (keyof Row)[];
const NUMERIC = new Set<keyof Row>(["rps", "p50", "p99", "errors"]);

export function textTable(results: Results): string {
  const all = [HEADINGS, ...rows(results)];
  const widths = KEYS.map((key) => Math.max(...all.map((row) => row[key].length)));
  const line = (row: Row) =>
    KEYS.map((key, i) => (NUMERIC.has(key) && row !== HEADINGS ? row[key].padStart(widths[i]!) : row[key].padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(HEADINGS), widths.map((w) => "-".repeat(w)).join("  "), ...all.slice(1).map(line)].join("\n");
}

function markdownTable(results: Results): string {
  const esc = (text: string) => text.replaceAll("|", "\\|");
  const head = `| ${KEYS.map((key) => HEADINGS[key]).join(" | ")} |`;
  const align = `|${KEYS.map((key) => (NUMERIC.has(key) ? "---:" : "---")).join("|")}|`;
  return [head, align, ...rows(results).map((row) => `| ${KEYS.map((key) => esc(row[key])).join(" | ")} |`)].join("\n");
}

export function bcryptLines(results: Results): string[] {
  const b = results.bcrypt;
  if (!b) return ["bcrypt: not measured"];
  const lines = [
    `bcrypt cost ${b.cost} inside workerd: one hash ${fmt(b.hashMs, 1)} ms, one compare ${fmt(b.compareMs, 1)} ms of CPU.`,
    `  Workers Free (${FREE_CPU_MS} ms CPU per request): a hash is ${fmt(b.hashMs / FREE_CPU_MS, 1)}x the limit, a compare ${fmt(b.compareMs / FREE_CPU_MS, 1)}x.`,
    `  Workers Paid (${PAID_CPU_MS / 1000} s CPU by default): a hash is ${fmt((b.hashMs / PAID_CPU_MS) * 100, 2)}% of the limit, a compare ${fmt((b.compareMs / PAID_CPU_MS) * 100, 2)}%.`,
  ];
  if (b.loginOverCompare !== undefined) {
    const meets = b.loginOverCompare <= 1.1;
    lines.push(
      `POST /auth/login vs one compare, one request at a time (${b.loginMs.length} of each, interleaved), p50: ` +
        `login ${fmt(b.loginP50, 1)} ms, compare-only request ${fmt(b.compareRequestP50, 1)} ms, ratio ${fmt(b.loginOverCompare, 3)} ` +
        `(target ≤ 1.1: ${meets ? "met" : "MISSED"}; median of the per-pair ratios ${fmt(b.pairRatioMedian, 3)}).`,
    );
  }
  return lines;
}

/** The large-notes scenario and the reads during lists, as lines for the terminal and results.md. */
export function largeLines(results: Results): string[] {
  const lines: string[] = [];
  for (const p of results.large) {
    lines.push(
      `GET /notes with ${p.notes} notes of 1 MiB (${fmt(p.mib, 1)} MiB): ${fmt(p.medianMs, 0)} ms, ${fmt(p.msPerMiB, 1)} ms per MiB; ` +
        `${p.d1RoundTrips ?? "-"} D1 round trips, the longest ${p.slowestD1Ms ?? "-"} ms.`,
    );
  }
  const r = results.readsDuringList;
  if (r) {
    const ratios = (reader: ReadPairs) => `p99 ${ratioAndRange(reader, (p) => p.p99)}, p50 ${ratioAndRange(reader, (p) => p.p50)}`;
    lines.push(
      `GET /notes/{id} (${r.connections} connections) while ${r.lists} lists of ${fmt(r.listMiB, 0)} MiB stream, against alone ` +
        `(medians of ${r.ours.pairs.length} pairs): ours ${ratios(r.ours)}; the floor ${ratios(r.floor)}; ` +
        `ours in a second workerd on a copy of the database ${ratios(r.replica)}.`,
    );
  }
  return lines;
}

/** A reader's median p99 ratio against READ_P99_TARGET. */
function readVerdict(reader: ReadPairs): string {
  return `${fmt(reader.p99Ratio, 1)}× (${reader.p99Ratio <= READ_P99_TARGET ? "met" : "MISSED"})`;
}

/** The feature-cost table. */
export function featureLines(results: Results): string[] {
  if (!results.features.length) return [];
  return [
    "| Feature | Write | with: ms / rows written | without: ms / rows written | adds | through the app: req/s with / without (change) |",
    "|---|---|---:|---:|---|---:|",
    ...results.features.map(
      (f) =>
        `| ${f.feature} | ${f.write} | ${fmt(f.withMs, 3)} / ${fmt(f.withRows, 1)} | ${fmt(f.withoutMs, 3)} / ${fmt(f.withoutRows, 1)} | ` +
        `${fmt(f.withMs - f.withoutMs, 3)} ms, ${fmt(f.withRows - f.withoutRows, 1)} rows | ` +
        `${f.withRps === undefined || f.withoutRps === undefined ? "-" : `${fmt(f.withRps, 0)} / ${fmt(f.withoutRps, 0)} (${fmt((f.withRps / f.withoutRps - 1) * 100, 1)}%)`} |`,
    ),
  ];
}

/**
 * The polling target (the performance issue: a poll "costs about what a single-note read costs", at 100
 * notes and at 10,000), read as at most this many times a read's CPU; bench/README.md says why.
 */
export const POLL_OVER_READ_TARGET = 1.5;

/** The performance issue: reads during large lists within 3 times their p99 alone. */
export const READ_P99_TARGET = 3;

/** The CPU rows compared for the polling target: each poll's, and the single read's. */
const POLL_KEYS = ["poll-100", "poll-10000"];
const READ_KEY = "get-note";

export interface PollVerdict {
  label: string;
  pollMs: number;
  readMs: number;
  overRead: number;
  met: boolean;
}

/** Each measured poll's CPU against the single read's, with the target's verdict (none without a read). */
export function pollVerdicts(rows: readonly CpuRow[]): PollVerdict[] {
  const read = rows.find((row) => row.key === READ_KEY && !row.skipped);
  if (!read) return [];
  return rows
    .filter((row) => POLL_KEYS.includes(row.key) && !row.skipped)
    .map((row) => {
      const overRead = row.oursMs / read.oursMs;
      return { label: row.label, pollMs: row.oursMs, readMs: read.oursMs, overRead, met: overRead <= POLL_OVER_READ_TARGET };
    });
}

/** The verdict as one sentence, for the report and its findings. */
export function pollVerdictText(v: PollVerdict): string {
  return `${v.label}: ${fmt(v.pollMs, 2)} ms, ${fmt(v.overRead, 2)}× a single read's ${fmt(v.readMs, 2)} ms (target ≤ ${POLL_OVER_READ_TARGET}×: ${v.met ? "met" : "MISSED"})`;
}

/** The CPU table: per endpoint, ours and the floor's, against the Free plan's 10 ms. */
export function cpuLines(results: Results): string[] {
  if (!results.cpu.length) return [];
  const lines = [
    "| Endpoint | requests × reps | ours ms CPU/request (lowest–highest rep) | floor ms | main thread: ours ms | main thread: floor ms | Free plan (≤ 10 ms) |",
    "|---|---:|---:|---:|---:|---:|---|",
  ];
  for (const row of results.cpu) {
    if (row.skipped) {
      lines.push(`| ${row.label} | - | not measured: ${row.skipped} | - | - | - | - |`);
      continue;
    }
    const fits = row.oursMs <= FREE_CPU_MS ? "fits" : "needs Paid";
    lines.push(
      `| ${row.label} | ${row.requests} × 3 | ${fmt(row.oursMs, 2)} (${fmt(row.spread.min, 2)}–${fmt(row.spread.max, 2)}) | ${fmt(row.floorMs, 2)} | ` +
        `${fmt(row.oursMainMs, 2)} | ${fmt(row.floorMainMs, 2)} | ${fits} |`,
    );
  }
  return lines;
}

/** Polling against its target, under the CPU table (nothing when no poll or no read was measured). */
function pollLines(results: Results): string {
  const verdicts = pollVerdicts(results.cpu);
  if (!verdicts.length) return "";
  return `\n\nPolling, a matching \`If-None-Match\` answered 304 (about a single read's CPU):\n\n${verdicts.map((v) => `- ${pollVerdictText(v)}.`).join("\n")}`;
}

export function bundleLines(results: Results): string[] {
  const { bytes, gzipBytes } = results.bundle;
  return [
    `Deployable bundle (wrangler deploy --dry-run): ${kib(bytes)}, gzip ${kib(gzipBytes)} ` +
      `(${fmt((gzipBytes / FREE_BUNDLE_GZIP) * 100, 1)}% of the Free plan's 3 MiB, ${fmt((gzipBytes / PAID_BUNDLE_GZIP) * 100, 1)}% of Paid's 10 MiB).`,
  ];
}

export function markdown(results: Results): string {
  const m = results.meta;
  const ratioLines = results.scenarios
    .filter((s) => s.ratios)
    .map((s) => `- ${s.detail ? `${s.title} (${s.detail})` : s.title}: ${s.ratios!.map((r) => fmt(r, 2)).join(", ")}`)
    .join("\n");
  const largeRows = results.large.map(
    (p) => `| ${p.notes} | ${fmt(p.mib, 1)} | ${fmt(p.medianMs, 0)} | ${fmt(p.msPerMiB, 1)} | ${p.d1RoundTrips ?? "-"} | ${p.slowestD1Ms ?? "-"} |`,
  );
  const r = results.readsDuringList;
  const readerRow = (label: string, reader: ReadPairs) =>
    `| ${label} | ${reader.pairs.map((p) => fmt(p.idle.p99, 2)).join(", ")} | ${reader.pairs.map((p) => fmt(p.during.p99, 2)).join(", ")} | ` +
    `${ratioAndRange(reader, (p) => p.p99)} | ${ratioAndRange(reader, (p) => p.p50)} |`;
  const readsSection = r
    ? `
## GET /notes/{id} while large lists stream

${r.connections} connections read random small notes for ${m.options.duration} s alone, then for ${m.options.duration} s while ${r.lists} whole lists of the
${r.listNotes.toLocaleString("en-US")} notes (${fmt(r.listMiB, 0)} MiB of content) stream without pause, ${r.ours.pairs.length} times
(${r.listsCompleted} lists completed meanwhile${r.listMs.length ? `, ${r.listMs.map((v) => `${fmt(v / 1000, 1)} s`).join(", ")}` : ""}). Ratios are during the lists
over alone, per pair: the median, and the lowest and highest pair.

| GET /notes/{id} from | p99 alone, ms (each pair) | p99 during the lists, ms | p99 ratio | p50 ratio |
|---|---|---|---|---|
${readerRow("ours", r.ours)}
${readerRow("the floor (another isolate, same database)", r.floor)}
${readerRow("ours in a second workerd, on a copy of the database", r.replica)}

Target: a p99 during the lists at most ${READ_P99_TARGET}× the p99 alone. Ours in the lists' workerd: ${readVerdict(r.ours)}; ours in a
second workerd, production's shape: ${readVerdict(r.replica)}.

The floor reads the same database from another isolate: where its reads slow down as much as ours, the time goes to the
database (one query at a time) and the process; where ours slow down alone, to our isolate, which also streams the lists.
The last row is production's shape: the reads served by a second workerd process (its own thread, like an isolate on
another machine) from a copy of the database (like a read replica), while the lists stream from the first process
(${r.replicaListsCompleted} lists completed meanwhile). Here the two processes, the lists' client and the load generator
still share this machine's cores, which production's isolates, databases and clients do not.
`
    : "";
  const chartRows = results.chart.map(
    (p) => `| ${p.size.toLocaleString("en-US")} | ${fmt(p.p50, 1)} | ${fmt(p.p99, 1)} | ${fmt(p.rps, 1)} | ${p.requests} | ${p.mode} |`,
  );
  return `# Benchmark results

Generated by \`${m.command}\` on ${m.date}, source at ${m.source}. ${m.machine}.
Node ${m.node}, wrangler ${m.wrangler}, miniflare ${m.miniflare}, workerd ${m.workerd}.
Load: autocannon over loopback, ${m.options.connections} connections, ${m.options.duration} s per run after ${m.options.warmup} s of warm-up,
${m.options.pairs} pair(s) of runs per scenario; with a floor, each pair is one run of ours and one of the floor, the order
alternating from pair to pair. Values are medians over the runs (errors and non-2xx are sums). The load generator
and workerd share the machine's cores: compare ratios, not absolute numbers.
Machine load average (1, 5, 15 min) at the start: ${m.loadAverage.atStart.join(", ")}; at the end: ${m.loadAverage.atEnd.join(", ")}.

${markdownTable(results)}

- **ours/floor**: our requests/s divided by the floor's in each pair of runs: the median over the ${m.options.pairs} pairs, and in
  brackets the lowest and the highest pair (every pair in results.json, and below). The floor (\`bench/floor-worker.js\`) is a
  bare module worker with one prepared D1 statement per request.
- **D1 queries/req**: round trips to D1 (\`first/all/run/raw\`, \`batch\`, \`exec\`) per request, counted by the
  bench-only build \`bench/counting-entry.ts\` over ${m.countRequests} sequential requests per scenario (3 for lists of
  10,000 or more). "21 = 1 + 20 streamed": 1 before the answer, 20 while the list's body streams; "first" marks a
  target that applies to the round trips before the answer.
  Targets (issue "Performance"): 1 per notes request (for the list: before the answer; the chunks of a
  list longer than one streamed chunk are set aside), at most 2 per accounts request.

Per-pair ratios, in the order run:
${ratioLines}

## Bundle

${bundleLines(results).join("\n")}

## Large notes

GET /notes over notes of 1 MiB, one request at a time (median of ${m.options.largeReps}); the D1 round trips and the longest of them
from one request to the counting build. The longest round trip is how long one list held the database at once.

| Notes | MiB | ms | ms per MiB | D1 round trips | longest round trip ms |
|---:|---:|---:|---:|---:|---:|
${largeRows.join("\n")}
${readsSection}

## CPU time per request

What Workers bills, and what the Free plan caps at ${FREE_CPU_MS} ms: the CPU time of the workerd process over a fixed number of
sequential requests, minus the same number to an empty worker, per request; three repetitions, alternating ours, the
floor and the empty worker. Locally D1 runs inside the same process, so each figure includes SQLite's own work, which
Cloudflare does not bill to the Worker: an upper bound. "floor" is the bare worker doing the same work. The "main
thread" columns count workerd's main thread alone, which runs every isolate and SQLite: what throughput under load
waits on. The process's other threads are V8's garbage collection and compilers, and workerd's own.

${cpuLines(results).join("\n") || "Not measured in this run."}${pollLines(results)}

## What each feature of the write path costs

Short notes written one statement at a time straight to D1 (200 of each, medians of the time from Node, round trip
included), with every feature on, then with the feature's triggers dropped (the bench's database is thrown away
afterwards); rows written are D1's \`meta.rows_written\` (index entries included). The last column is the same write through
the app under load (\`POST /notes\`, \`PATCH /notes/{id}\`, ${m.options.connections} connections): requests/s with the feature's triggers and
without them, the medians of alternating runs (the triggers are put back after each run without). The idempotency key is
measured through the app, a \`POST /notes\` with a new key each time against one without: its "ms" are CPU per request
(as above), its rows written D1's over whole requests (the counting build, one request at a time), its requests/s as
for the triggers.

${featureLines(results).join("\n") || "Not measured in this run."}

## bcrypt and login

${bcryptLines(results).map((line) => `- ${line.trim()}`).join("\n")}

## GET /notes latency against list size

![GET /notes latency](list-latency.svg)

| Notes | p50 ms | p99 ms | req/s | requests (all runs) | load |
|---:|---:|---:|---:|---:|---|
${chartRows.join("\n")}

## Findings

${results.findings.length ? results.findings.map((f) => `- ${f}`).join("\n") : `- None${results.failures.length ? "" : ": every target met"}.`}
${results.observations.length ? `\n## Observations\n\n${results.observations.map((o) => `- ${o}`).join("\n")}\n` : ""}${results.failures.length ? `\n## Failures\n\n${results.failures.map((f) => `- ${f}`).join("\n")}\n` : ""}
## Settings

\`\`\`json
${JSON.stringify(m.settings, null, 2)}
\`\`\`
`;
}

/** A plain SVG line chart: list size (log scale) against latency (log scale), p50 and p99. */
export function latencySvg(points: ChartPoint[], connections: number): string {
  const data = points.filter((p) => Number.isFinite(p.p50) && Number.isFinite(p.p99) && p.p50 > 0);
  const W = 720;
  const H = 440;
  const left = 80;
  const right = 30;
  const top = 50;
  const bottom = 70;
  const plotW = W - left - right;
  const plotH = H - top - bottom;
  const esc = (s: string) => s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">GET /notes latency against list size (${connections} connections)</text>`,
  ];
  if (data.length === 0) {
    out.push(`<text x="${W / 2}" y="${H / 2}" text-anchor="middle">no data</text>`, "</svg>");
    return out.join("\n");
  }
  const log = Math.log10;
  const xs = data.map((p) => p.size);
  const ys = data.flatMap((p) => [p.p50, p.p99]);
  const xMin = Math.floor(log(Math.min(...xs)));
  const xMax = Math.max(xMin + 1, Math.ceil(log(Math.max(...xs))));
  const yMin = Math.floor(log(Math.min(...ys)));
  const yMax = Math.max(yMin + 1, Math.ceil(log(Math.max(...ys))));
  const round = (n: number) => Math.round(n * 10) / 10;
  const x = (size: number) => round(left + ((log(size) - xMin) / (xMax - xMin)) * plotW);
  const y = (ms: number) => round(top + plotH - ((log(ms) - yMin) / (yMax - yMin)) * plotH);

  out.push(`<g stroke="#ddd">`);
  for (let e = yMin; e <= yMax; e++) out.push(`<line x1="${left}" x2="${left + plotW}" y1="${y(10 ** e)}" y2="${y(10 ** e)}"/>`);
  for (let e = xMin; e <= xMax; e++) out.push(`<line x1="${x(10 ** e)}" x2="${x(10 ** e)}" y1="${top}" y2="${top + plotH}"/>`);
  out.push(`</g>`);
  out.push(`<rect x="${left}" y="${top}" width="${plotW}" height="${plotH}" fill="none" stroke="#444"/>`);
  for (let e = yMin; e <= yMax; e++) {
    out.push(`<text x="${left - 8}" y="${y(10 ** e) + 4}" text-anchor="end">${esc((10 ** e).toLocaleString("en-US"))}</text>`);
  }
  for (let e = xMin; e <= xMax; e++) {
    out.push(`<text x="${x(10 ** e)}" y="${top + plotH + 18}" text-anchor="middle">${esc((10 ** e).toLocaleString("en-US"))}</text>`);
  }
  out.push(`<text x="${left + plotW / 2}" y="${H - 25}" text-anchor="middle">notes in the list (log scale)</text>`);
  out.push(`<text transform="translate(20 ${top + plotH / 2}) rotate(-90)" text-anchor="middle">latency, ms (log scale)</text>`);

  // p50 labels below their points, p99 labels above, so close values do not overlap.
  const series = [
    { name: "p50", color: "#1f77b4", pick: (p: ChartPoint) => p.p50, dy: 18 },
    { name: "p99", color: "#d62728", pick: (p: ChartPoint) => p.p99, dy: -8 },
  ];
  for (const s of series) {
    const path = data.map((p, i) => `${i ? "L" : "M"}${x(p.size).toFixed(1)},${y(s.pick(p)).toFixed(1)}`).join(" ");
    out.push(`<path d="${path}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    for (const p of data) {
      const cx = x(p.size).toFixed(1);
      const cy = y(s.pick(p)).toFixed(1);
      out.push(`<circle cx="${cx}" cy="${cy}" r="4" fill="${s.color}"/>`);
      const anchor = p.size === data.at(-1)!.size && data.length > 1 ? "end" : p.size === data[0]!.size ? "start" : "middle";
      out.push(
        `<text x="${cx}" y="${(Number(cy) + s.dy).toFixed(1)}" text-anchor="${anchor}" fill="${s.color}">${esc(fmt(s.pick(p), s.pick(p) < 10 ? 1 : 0))} ms</text>`,
      );
    }
  }
  series.forEach((s, i) => {
    const lx = left + 12;
    const ly = top + 16 + i * 18;
    out.push(`<line x1="${lx}" x2="${lx + 24}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"/>`);
    out.push(`<text x="${lx + 30}" y="${ly + 4}">${s.name}</text>`);
  });
  const notes = data.filter((p) => p.mode !== "duration").map((p) => `${p.size.toLocaleString("en-US")}: ${p.mode}`);
  if (notes.length) out.push(`<text x="${left}" y="${H - 8}" font-size="11" fill="#555">${esc(notes.join("; "))}</text>`);
  out.push("</svg>");
  return out.join("\n") + "\n";
}
