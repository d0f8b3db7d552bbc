/**
 * `npm run bench`: our worker against bare "floor" workers in the Workers runtime (workerd through Miniflare,
 * no `wrangler dev` proxy), in the same run. See bench/README.md.
 *
 *   1. bundles our worker with `wrangler deploy --dry-run`, and the bench-only counting build;
 *   2. starts one workerd with those, the floors and an empty worker, on loopback, with wrangler.toml's
 *      settings and a fresh D1 in a temporary directory, migrated from drizzle/;
 *   3. runs each scenario of bench/scenarios.ts in turn;
 *   4. prints the results and writes them to bench/.results/ (never committed).
 *
 * Exits non-zero when a request failed or answered an unexpected status.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { buildBundle } from "./lib/build.ts";
import { workerdPids } from "./lib/cpu.ts";
import { closeConnections } from "./lib/load.ts";
import type { Context, Row } from "./lib/measure.ts";
import { readOptions } from "./lib/options.ts";
import { json, markdown, type Results } from "./lib/report.ts";
import { startRuntime, type Runtime } from "./lib/runtime.ts";
import { BCRYPT_COST, scenarios } from "./scenarios.ts";
import { LIVE_SOCKETS } from "./lib/live.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const benchDir = join(root, "bench");
const opts = readOptions(process.argv.slice(2), benchDir);
const log = (line: string) => console.log(line);

let runtime: Runtime | undefined;
async function cleanup(): Promise<void> {
  const rt = runtime;
  runtime = undefined;
  await rt?.dispose().catch((err) => console.error("[bench] cleanup failed:", err));
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`\n[bench] ${signal}: stopping workerd and removing the temporary database...`);
    void cleanup().finally(() => process.exit(130));
  });
}
// Bounded in time whatever hangs: twice a generous estimate of the run.
const watchdogSeconds = 2 * (600 + 10 * (2 * opts.warmup + 2 * opts.pairs * opts.duration + 60));
setTimeout(() => {
  console.error(`[bench] gave up after ${watchdogSeconds} s; cleaning up.`);
  void cleanup().finally(() => process.exit(2));
}, watchdogSeconds * 1000).unref();

/** The commit bundled, and whether src/ or the config had uncommitted changes. */
function sourceState(): string {
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  const dirty = git("status", "--porcelain", "--", "src", "drizzle", "wrangler.toml", "package.json") !== "";
  return `${git("rev-parse", "--short", "HEAD")}${dirty ? " with uncommitted changes in src/, drizzle/ or the config" : ""}`;
}
const versionOf = (pkg: string) =>
  (JSON.parse(readFileSync(join(root, "node_modules", pkg, "package.json"), "utf8")) as { version: string }).version;

async function main(): Promise<number> {
  const started = Date.now();
  const atStart = loadavg().map((n) => Math.round(n * 100) / 100);
  const all = scenarios(opts);
  const selected = (key: string) => !opts.only || opts.only.some((k) => key === k || key.startsWith(`${k}:`));
  const unknown = (opts.only ?? []).filter((k) => !all.some((s) => s.key === k || s.key.startsWith(`${k}:`)));
  if (unknown.length)
    throw new Error(`unknown scenario(s) in --only: ${unknown.join(", ")}; known: ${all.map((s) => s.key).join(", ")}`);

  log(
    `[bench] ${opts.smoke ? "smoke: " : ""}${opts.connections} connections, ${opts.duration} s per run, ${opts.warmup} s warm-up, ${opts.pairs} pair(s)`,
  );
  const source = sourceState();
  log(`[bench] bundling ${source} with wrangler deploy --dry-run ...`);
  // The bundles go to a temporary directory, removed when the run ends.
  const buildDir = mkdtempSync(join(tmpdir(), "notes-bench-build-"));
  process.on("exit", () => rmSync(buildDir, { recursive: true, force: true }));
  const [app, counting] = await Promise.all([
    buildBundle(root, join(buildDir, "app")),
    buildBundle(root, join(buildDir, "counting"), "bench/counting-entry.ts"),
  ]);
  log(`[bench] bundle: ${(app.bytes / 1024).toFixed(2)} KiB, gzip ${(app.gzipBytes / 1024).toFixed(2)} KiB`);

  // Passkeys as in development (RP ID localhost, origin http://localhost:8787), for the passkey sign-in rows;
  // LIVE_SOCKETS_PER_ACCOUNT: the live scenario holds LIVE_SOCKETS sockets on one account, past the default cap.
  const vars = {
    JWT_SECRET_KEY: randomBytes(32).toString("base64url"),
    RATE_LIMITS: "off",
    BCRYPT_COST: String(BCRYPT_COST),
    WEBAUTHN_RP_ID: "localhost",
    LIVE_SOCKETS_PER_ACCOUNT: String(LIVE_SOCKETS),
  };
  const rt = await startRuntime({ root, app, counting, vars });
  runtime = rt;
  const failures: string[] = [];
  const ctx: Context = { rt, opts, pids: workerdPids(), log, fail: (problem) => failures.push(problem) };
  log(
    `[bench] workerd up (pid ${ctx.pids.join(", ") || "unknown: no CPU figures"}); migrations: ${rt.migrations.length}`,
  );

  const rows: Row[] = [];
  for (const s of all.filter((s) => selected(s.key))) {
    log(`\n${s.key}`);
    rows.push(...(await s.run(ctx)));
  }
  if (rt.logs.errors.length)
    failures.push(`the workers logged ${rt.logs.byLevel.error ?? 0} error line(s), e.g. ${rt.logs.errors[0]}`);

  const results: Results = {
    meta: {
      command: process.argv.length > 2 ? `npm run bench -- ${process.argv.slice(2).join(" ")}` : "npm run bench",
      date: new Date().toISOString(),
      source,
      machine: `${availableParallelism()} cores (${cpus()[0]?.model ?? "unknown CPU"}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${process.platform}/${process.arch}`,
      versions: Object.fromEntries([
        ["node", process.version.slice(1)],
        ...["wrangler", "miniflare", "workerd", "autocannon"].map((p) => [p, versionOf(p)]),
      ]) as Record<string, string>,
      options: { ...opts, outDir: relative(root, opts.outDir) },
      loadAverage: { atStart, atEnd: loadavg().map((n) => Math.round(n * 100) / 100) },
      bundle: { bytes: app.bytes, gzipBytes: app.gzipBytes },
      settings: rt.settings,
      migrations: rt.migrations,
      seconds: Math.round((Date.now() - started) / 1000),
    },
    rows,
    logs: rt.logs,
    failures,
  };
  closeConnections();
  await cleanup();

  const text = markdown(results);
  log(`\n${text}`);
  const name = opts.smoke ? "smoke" : "results";
  mkdirSync(opts.outDir, { recursive: true });
  writeFileSync(join(opts.outDir, `${name}.md`), text);
  writeFileSync(join(opts.outDir, `${name}.json`), json(results));
  log(`[bench] wrote ${relative(root, join(opts.outDir, `${name}.md`))} and ${name}.json in ${results.meta.seconds} s`);
  if (failures.length) console.error(`\n[bench] FAILED:\n${failures.map((f) => `- ${f}`).join("\n")}`);
  return failures.length ? 1 : 0;
}

let code = 1;
try {
  code = await main();
} catch (err) {
  console.error("[bench] error:", err);
} finally {
  await cleanup();
}
process.exit(code);
