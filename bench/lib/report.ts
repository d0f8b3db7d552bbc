/**
 * The results as Markdown (printed, and written to results.md) and as JSON (every measurement). The report
 * gives measured figures only: the targets and their verdicts live in docs/performance.md.
 */
import type { Row, Table } from "./measure.ts";

export interface Meta {
  command: string;
  date: string;
  /** The commit bundled, and whether src/ or the config had uncommitted changes. */
  source: string;
  machine: string;
  versions: Record<string, string>;
  options: Record<string, unknown>;
  loadAverage: { atStart: number[]; atEnd: number[] };
  bundle: { bytes: number; gzipBytes: number };
  settings: Record<string, unknown>;
  migrations: string[];
  seconds: number;
}

export interface Results {
  meta: Meta;
  rows: Row[];
  logs: { byLevel: Record<string, number>; errors: string[] };
  failures: string[];
}

const cell = (text: string) => text.replace(/\|/g, "\\|");

/** The rows grouped by table, in the order the tables first appear. */
function tables(rows: Row[]): [Table, Row[]][] {
  const grouped = new Map<Table, Row[]>();
  for (const row of rows) grouped.set(row.table, [...(grouped.get(row.table) ?? []), row]);
  return [...grouped];
}

export function markdown({ meta, rows, logs, failures }: Results): string {
  const o = meta.options;
  const v = meta.versions;
  const out = [
    "# Benchmark results",
    "",
    `\`${meta.command}\` on ${meta.date}, source at ${meta.source}, in ${meta.seconds} s. ${meta.machine}.`,
    `Node ${v.node}, wrangler ${v.wrangler}, miniflare ${v.miniflare}, workerd ${v.workerd}, autocannon ${v.autocannon}.`,
    `Load: ${String(o.connections)} connections, ${String(o.duration)} s per run after ${String(o.warmup)} s of warm-up, ${String(o.pairs)} pair(s) per scenario.`,
    `Load average (1, 5, 15 min) at the start ${meta.loadAverage.atStart.join(", ")}, at the end ${meta.loadAverage.atEnd.join(", ")}.`,
    `Bundle (wrangler deploy --dry-run): ${(meta.bundle.bytes / 1024).toFixed(2)} KiB, gzip ${(meta.bundle.gzipBytes / 1024).toFixed(2)} KiB.`,
  ];
  for (const [table, tableRows] of tables(rows)) {
    out.push("", `## ${table.title}`, "", table.about, "");
    out.push(
      `| ${table.columns.map(cell).join(" | ")} |`,
      `|${table.columns.map((_, i) => (i ? "---:" : "---")).join("|")}|`,
    );
    for (const row of tableRows) out.push(`| ${row.cells.map(cell).join(" | ")} |`);
  }
  const logLevels = Object.entries(logs.byLevel).map(([level, n]) => `${n} ${level}`);
  out.push(
    "",
    `Worker log lines: ${logLevels.join(", ") || "none"}.${logs.errors.length ? ` First errors: ${logs.errors.join(" / ")}` : ""}`,
  );
  if (failures.length) out.push("", "## Failures", "", ...failures.map((f) => `- ${f}`));
  out.push("", "## Settings", "", "```json", JSON.stringify(meta.settings, null, 2), "```", "");
  return out.join("\n");
}

export function json(results: Results): string {
  const rows = results.rows.map(({ table, ...row }) => ({ table: table.title, ...row }));
  return JSON.stringify({ ...results, rows }, null, 2) + "\n";
}
