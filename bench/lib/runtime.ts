/**
 * One Miniflare instance (workerd, the Workers runtime), each worker on its own loopback socket (no
 * `wrangler dev` proxy, no Miniflare entry worker in between):
 *
 * - `app`: our worker, the bundle `wrangler deploy` would upload; `appPrivate`: the same, NOTES_AUTH=required;
 * - `counting`, `countingPrivate`: the same app through bench/counting-entry.ts (D1 round trips, bcrypt probe);
 * - `floor`: bench/floor-worker.js; `floorAuth`: bench/floor-auth-worker.js (the same-work floor);
 * - `empty`: answers an empty 200, what the runtime costs per request before any code of ours.
 *
 * Our builds get wrangler.toml's settings (compatibility date and flags, the D1 binding `DB`, rate-limit
 * bindings, [vars]) through wrangler's own `unstable_getMiniflareWorkerOptions`, and every worker shares one
 * fresh D1 database in a temporary directory, migrated from drizzle/. .dev.vars and .env are never read;
 * no mail settings are passed, so registration sends no mail.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions, unstable_readConfig, unstable_splitSqlQuery } from "wrangler";
import type { Bundle } from "./build.ts";

export type WorkerName = "app" | "appPrivate" | "counting" | "countingPrivate" | "floor" | "floorAuth" | "empty";

export interface Runtime {
  urls: Record<WorkerName, string>;
  /** D1 from Node, through Miniflare: seeding. */
  sql(query: string, ...params: unknown[]): Promise<Record<string, unknown>[]>;
  migrations: string[];
  /** The settings the workers run with (the JWT secret masked), for the report. */
  settings: Record<string, unknown>;
  /** Log lines of the workers by level, and the first few errors. */
  logs: { byLevel: Record<string, number>; errors: string[] };
  /** The DevTools protocol's WebSocket URL of a worker's isolate (its heap, for the attachments scenario). */
  inspector(name: WorkerName): Promise<string>;
  dispose(): Promise<void>;
}

export interface RuntimeInput {
  root: string;
  app: Bundle;
  counting: Bundle;
  /** Bindings that replace or add to wrangler.toml's [vars]. */
  vars: Record<string, string>;
}

interface D1Like {
  prepare(query: string): { bind(...values: unknown[]): { all(): Promise<{ results: Record<string, unknown>[] }> } };
  batch(statements: unknown[]): Promise<unknown>;
}

/** The parts of wrangler's parsed config that the bench reads (wrangler's own type is a large union). */
interface WranglerConfig {
  vars?: Record<string, unknown>;
  d1_databases: { binding: string; migrations_dir?: string }[];
  userConfigPath?: string;
  secrets?: unknown;
}
type WorkerOptions = Record<string, unknown> & {
  compatibilityDate?: string;
  compatibilityFlags?: string[];
  d1Databases?: Record<string, unknown>;
};
const readConfig = unstable_readConfig as unknown as (args: { config: string }) => WranglerConfig;
const getWorkerOptions = unstable_getMiniflareWorkerOptions as unknown as (config: WranglerConfig) => {
  workerOptions: WorkerOptions;
};

const moduleType = (path: string) =>
  /\.m?js$/.test(path) ? "ESModule" : path.endsWith(".wasm") ? "CompiledWasm" : path.endsWith(".bin") ? "Data" : "Text";
const modulesOf = (bundle: Bundle) =>
  bundle.modules.map((path) => ({ type: moduleType(path), path: basename(path), contents: readFileSync(path) }));

export async function startRuntime(input: RuntimeInput): Promise<Runtime> {
  const config = readConfig({ config: join(input.root, "wrangler.toml") });
  const dir = mkdtempSync(join(tmpdir(), "notes-bench-"));
  // Whatever ends the process first (Miniflare's own signal handler exits at once on Ctrl+C).
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  process.on("exit", removeDir);
  // Pretend the config lives in a directory without .dev.vars or .env, so wrangler reads neither.
  const { workerOptions } = getWorkerOptions({
    ...config,
    userConfigPath: join(dir, "wrangler.toml"),
    secrets: undefined,
  });

  const vars: Record<string, string> = {};
  for (const [name, value] of Object.entries(config.vars ?? {}))
    vars[name] = typeof value === "string" ? value : JSON.stringify(value);
  Object.assign(vars, input.vars);
  delete vars.MAIL_EMAIL;
  delete vars.MAIL_APP_PASSWORD;

  const logs: Runtime["logs"] = { byLevel: {}, errors: [] };
  const direct = [{ host: "127.0.0.1", port: 0 }];
  const ours = { ...workerOptions, rootPath: input.root, unsafeDirectSockets: direct };
  const bare = {
    compatibilityDate: workerOptions.compatibilityDate,
    compatibilityFlags: workerOptions.compatibilityFlags,
    d1Databases: workerOptions.d1Databases,
    unsafeDirectSockets: direct,
  };
  const esm = (path: string, contents: string | Buffer) => [{ type: "ESModule", path, contents }];
  const privateVars = { ...vars, NOTES_AUTH: "required" };
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      host: "127.0.0.1",
      port: 0,
      resourcePersistencePath: dir,
      // A fixed placeholder for `request.cf`: Miniflare would otherwise fetch one from the internet.
      cf: false,
      // Any free port: the attachments scenario reads an isolate's heap through it.
      inspectorPort: 0,
      log: new Log(LogLevel.WARN),
      // The app logs JSON lines (e.g. "mail not configured" on every registration): counted, not printed.
      handleStructuredLogs: (entry: { level?: string; message?: string }) => {
        const level = entry.level ?? "log";
        logs.byLevel[level] = (logs.byLevel[level] ?? 0) + 1;
        if (level === "error" && logs.errors.length < 5) logs.errors.push(String(entry.message).slice(0, 500));
      },
      workers: [
        { ...ours, name: "app", bindings: vars, modules: modulesOf(input.app) },
        { ...ours, name: "appPrivate", bindings: privateVars, modules: modulesOf(input.app) },
        { ...ours, name: "counting", bindings: vars, modules: modulesOf(input.counting) },
        { ...ours, name: "countingPrivate", bindings: privateVars, modules: modulesOf(input.counting) },
        {
          ...bare,
          name: "floor",
          modules: esm("floor-worker.js", readFileSync(join(input.root, "bench/floor-worker.js"))),
        },
        {
          ...bare,
          name: "floorAuth",
          bindings: { JWT_SECRET_KEY: vars.JWT_SECRET_KEY },
          modules: esm("floor-auth-worker.js", readFileSync(join(input.root, "bench/floor-auth-worker.js"))),
        },
        {
          ...bare,
          name: "empty",
          modules: esm("empty.js", 'export default { fetch() { return new Response(""); } };'),
        },
      ],
    } as Parameters<typeof convertV4MiniflareOptions>[0]),
  );
  const dispose = async () => {
    try {
      await mf.dispose();
    } finally {
      removeDir();
      process.off("exit", removeDir);
    }
  };
  try {
    await mf.ready;
    const urls = {} as Record<WorkerName, string>;
    for (const name of ["app", "appPrivate", "counting", "countingPrivate", "floor", "floorAuth", "empty"] as const) {
      urls[name] = (await mf.unsafeGetDirectURL(name)).href.replace(/\/$/, "");
    }
    const db = (await mf.getD1Database("DB", "app")) as unknown as D1Like;
    // What `wrangler d1 migrations apply` would apply: every .sql file in name order, split by wrangler's splitter.
    const migrationsDir = join(
      input.root,
      config.d1_databases.find((d) => d.binding === "DB")?.migrations_dir ?? "migrations",
    );
    const migrations = readdirSync(migrationsDir)
      .filter((name) => name.endsWith(".sql"))
      .sort();
    for (const name of migrations) {
      const statements = unstable_splitSqlQuery(readFileSync(join(migrationsDir, name), "utf8"));
      await db.batch(statements.map((statement) => db.prepare(statement)));
    }
    return {
      urls,
      sql: async (query, ...params) =>
        (
          await db
            .prepare(query)
            .bind(...params)
            .all()
        ).results,
      migrations,
      settings: {
        compatibilityDate: workerOptions.compatibilityDate,
        compatibilityFlags: workerOptions.compatibilityFlags,
        vars: { ...vars, JWT_SECRET_KEY: "(random per run)" },
      },
      logs,
      inspector: async (name) => {
        const base = await mf.getInspectorURL();
        return `ws://${base.host}/core:user:${name}`;
      },
      dispose,
    };
  } catch (err) {
    await dispose().catch(() => {});
    throw err;
  }
}
