/**
 * Bundles our worker the way wrangler deploys it: `wrangler deploy --dry-run --outdir` with the project's
 * wrangler.toml. Twice: the real entry (src/index.ts, measured and sized) and the bench-only counting
 * entry (bench/counting-entry.ts, which wraps the same app to count D1 round trips).
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

export interface Bundle {
  /** Every module wrangler wrote (source maps aside), the main one first. */
  modules: string[];
  /** Bytes of all modules, and after gzip (as wrangler computes its own figure). */
  bytes: number;
  gzipBytes: number;
}

function runWrangler(root: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, "node_modules/wrangler/bin/wrangler.js"), ...args], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      // No banner (it checks the npm registry for updates) and no telemetry: the bench stays offline.
      env: { ...process.env, WRANGLER_HIDE_BANNER: "true", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGTERM"), 120_000);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`wrangler ${args.join(" ")} failed (${signal ?? `exit ${code}`}):\n${output}`));
    });
  });
}

export async function buildBundle(root: string, outDir: string, entry?: string): Promise<Bundle> {
  rmSync(outDir, { recursive: true, force: true });
  await runWrangler(root, ["deploy", ...(entry ? [entry] : []), "--dry-run", "--outdir", outDir]);
  const files = readdirSync(outDir).filter((name) => /\.(m?js|wasm|bin|txt|html|sql)$/.test(name));
  const mainName = entry ? entry.replace(/^.*\//, "").replace(/\.[cm]?[jt]s$/, ".js") : "index.js";
  if (!files.includes(mainName))
    throw new Error(`wrangler wrote no ${mainName} in ${outDir} (found: ${files.join(", ")})`);
  const modules = [mainName, ...files.filter((name) => name !== mainName)].map((name) => join(outDir, name));
  const all = Buffer.concat(modules.map((path) => readFileSync(path)));
  return { modules, bytes: all.length, gzipBytes: gzipSync(all).length };
}
