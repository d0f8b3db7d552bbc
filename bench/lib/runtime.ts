/**
 * One Miniflare instance (workerd, the Workers runtime) serving these workers, each on its own loopback
 * socket straight into the worker (no `wrangler dev` proxy, no Miniflare entry worker in between):
 *
 * - `app`: our worker, the bundle `wrangler deploy` would upload;
 * - `counting`: the same app through bench/counting-entry.ts (D1 round-trip counts, bcrypt probes);
 * - `floor`: bench/floor-worker.js, the bare baseline;
 * - `floorAuth`: bench/floor-auth-worker.js, the bare baseline that does our NOTES_AUTH=required work;
 * - `appPrivate`, `countingPrivate`: the first two with NOTES_AUTH=required.
 *
 * All three get wrangler.toml's settings (compatibility date and flags, the D1 binding `DB`, rate-limit
 * bindings, [vars]) through wrangler's own `unstable_getMiniflareWorkerOptions`, and share one fresh D1
 * database kept in a temporary directory. Developer files (.dev.vars, .env) are never read: the vars
 * are wrangler.toml's plus the bench's overrides, and no mail settings, so registration sends no mail.
 *
 * On request (`replica()`), a second instance, another workerd process, serves `app` alone from a copy of
 * that database.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions, unstable_readConfig, unstable_splitSqlQuery } from "wrangler";
import type { Bundle } from "./build.ts";

/** `appPrivate` and `countingPrivate`: the same builds with NOTES_AUTH=required. */
/** `floorAuth`: bench/floor-auth-worker.js, the same-work floor of the NOTES_AUTH=required scenarios. */
/** `empty`: a worker that answers an empty 200, what the runtime costs per request before any of our code. */
export type WorkerName = "app" | "counting" | "floor" | "floorAuth" | "appPrivate" | "countingPrivate" | "empty";

export interface LogTally {
  byLevel: Record<string, number>;
  /** The first few error lines, for the report. */
  errors: string[];
}

export interface Runtime {
  urls: Record<WorkerName, string>;
  /** workerd's inspector port, when it was asked for (RuntimeInput). */
  inspectorPort: number | undefined;
  /** D1 from Node, through Miniflare: migrations and seeding. */
  sql(query: string, ...params: unknown[]): Promise<Record<string, unknown>[]>;
  /** The same, with the time D1 reports for running the statement (`meta.duration`, milliseconds). */
  timedSql(query: string, ...params: unknown[]): Promise<{ rows: Record<string, unknown>[]; durationMs: number; rowsWritten: number }>;
  logs: LogTally;
  migrations: string[];
  /** The settings the workers run with (the JWT secret masked), for the report. */
  settings: Record<string, unknown>;
  /**
   * Our worker in a second workerd process, on a copy of the database as it is now: production's shape,
   * where a read need not share a thread or a database with whatever else the Worker serves (isolates on
   * other machines, D1's read replicas). Nothing may write to the database while it is copied.
   */
  replica(): Promise<Replica>;
  dispose(): Promise<void>;
}

export interface Replica {
  /** Our worker (`app`) in the second process. */
  url: string;
  dispose(): Promise<void>;
}

interface D1Like {
  prepare(query: string): { bind(...values: unknown[]): { all(): Promise<{ results: Record<string, unknown>[]; meta: { duration: number; rows_written?: number } }> } };
  batch(statements: unknown[]): Promise<unknown>;
}

function moduleType(path: string): "ESModule" | "CompiledWasm" | "Data" | "Text" {
  if (/\.m?js$/.test(path)) return "ESModule";
  if (path.endsWith(".wasm")) return "CompiledWasm";
  if (path.endsWith(".bin")) return "Data";
  return "Text";
}

function modulesOf(bundle: Bundle) {
  return bundle.modules.map((path) => ({ type: moduleType(path), path: basename(path), contents: readFileSync(path) }));
}

export interface RuntimeInput {
  root: string;
  app: Bundle;
  counting: Bundle;
  floorPath: string;
  floorAuthPath: string;
  /** Bindings that replace or add to wrangler.toml's [vars]. */
  vars: Record<string, string>;
  /** Open workerd's inspector on this loopback port (for CPU profiles, see profile.ts). */
  inspectorPort?: number;
}

/** The parts of wrangler's parsed config that the bench reads (wrangler's own type is a large union). */
interface WranglerConfig {
  vars?: Record<string, unknown>;
  d1_databases: { binding: string; migrations_dir?: string }[];
  userConfigPath?: string;
  secrets?: unknown;
}

/** Miniflare 4-shaped worker options, as wrangler produces them; passed through as they are. */
type WorkerOptions = Record<string, unknown> & {
  compatibilityDate?: string;
  compatibilityFlags?: string[];
  d1Databases?: Record<string, unknown>;
  ratelimits?: Record<string, unknown>;
};

const readConfig = unstable_readConfig as unknown as (args: { config: string }) => WranglerConfig;
const getMiniflareWorkerOptions = unstable_getMiniflareWorkerOptions as unknown as (config: WranglerConfig) => {
  workerOptions: WorkerOptions;
};

/**
 * A new temporary directory, removed by `remove()` or, whatever ends the process first (Miniflare's own
 * signal handler exits at once on Ctrl+C), when it exits.
 */
function temporaryDir(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  const removeDir = () => rmSync(path, { recursive: true, force: true });
  process.on("exit", removeDir);
  return {
    path,
    remove() {
      removeDir();
      process.off("exit", removeDir);
    },
  };
}

/**
 * Folds each SQLite database's write-ahead log below `dir` into the database file, as a read replica's
 * copy would hold it: a copy taken while workerd has the database open carries the log of every write
 * since workerd's last checkpoint (hundreds of MiB after the large notes), which each read would search.
 */
function foldWriteAheadLogs(dir: string): void {
  for (const name of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    if (!name.endsWith(".sqlite")) continue;
    const db = new DatabaseSync(join(dir, name));
    try {
      db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } finally {
      db.close();
    }
  }
}

/** Stops a workerd instance, then removes its directory, even when stopping fails. */
async function shutDown(instance: Miniflare, dir: { remove(): void }): Promise<void> {
  try {
    await instance.dispose();
  } finally {
    dir.remove();
  }
}

/** The loopback URL straight into one worker of an instance, without a trailing slash. */
async function directUrl(instance: Miniflare, worker: string): Promise<string> {
  return (await instance.unsafeGetDirectURL(worker)).href.replace(/\/$/, "");
}

export async function startRuntime(input: RuntimeInput): Promise<Runtime> {
  const configPath = join(input.root, "wrangler.toml");
  const config = readConfig({ config: configPath });
  const persisted = temporaryDir("notes-bench-");
  const persistDir = persisted.path;
  // Pretend the config lives in a directory without .dev.vars or .env, so wrangler reads neither.
  const { workerOptions } = getMiniflareWorkerOptions({
    ...config,
    userConfigPath: join(persistDir, "wrangler.toml"),
    secrets: undefined,
  });

  const vars: Record<string, string> = {};
  for (const [name, value] of Object.entries(config.vars ?? {})) vars[name] = typeof value === "string" ? value : JSON.stringify(value);
  Object.assign(vars, input.vars);
  delete vars.MAIL_EMAIL;
  delete vars.MAIL_APP_PASSWORD;

  const logs: LogTally = { byLevel: {}, errors: [] };
  const direct = [{ host: "127.0.0.1", port: 0 }];
  const shared = { ...workerOptions, rootPath: input.root, bindings: vars, unsafeDirectSockets: direct };
  const app = { ...shared, name: "app", modules: modulesOf(input.app) };

  // One workerd process serving `workers`, its D1 kept in `dir`. The worker options wrangler produces
  // are Miniflare 4's shape; Miniflare 5 converts them.
  const instance = (dir: string, workers: unknown[], inspectorPort?: number) =>
    new Miniflare(
      convertV4MiniflareOptions({
        host: "127.0.0.1",
        port: 0,
        resourcePersistencePath: dir,
        // A fixed placeholder for `request.cf`: Miniflare would otherwise fetch one from the internet.
        cf: false,
        ...(inspectorPort ? { inspectorPort } : {}),
        log: new Log(LogLevel.WARN),
        // The app logs one JSON line per event (e.g. "mail not configured" on every registration);
        // counted here instead of flooding the terminal.
        handleStructuredLogs: (entry: { level?: string; message?: string }) => {
          const level = entry.level ?? "log";
          logs.byLevel[level] = (logs.byLevel[level] ?? 0) + 1;
          if (level === "error" && logs.errors.length < 5) logs.errors.push(String(entry.message).slice(0, 500));
        },
        workers,
      } as Parameters<typeof convertV4MiniflareOptions>[0]),
    );

  let mf: Miniflare | undefined;
  try {
    mf = instance(persistDir, [
      app,
      { ...shared, name: "counting", modules: modulesOf(input.counting) },
      { ...shared, name: "appPrivate", bindings: { ...vars, NOTES_AUTH: "required" }, modules: modulesOf(input.app) },
      { ...shared, name: "countingPrivate", bindings: { ...vars, NOTES_AUTH: "required" }, modules: modulesOf(input.counting) },
      {
        name: "floor",
        compatibilityDate: workerOptions.compatibilityDate,
        compatibilityFlags: workerOptions.compatibilityFlags,
        d1Databases: workerOptions.d1Databases,
        unsafeDirectSockets: direct,
        modules: [{ type: "ESModule", path: "floor-worker.js", contents: readFileSync(input.floorPath) }],
      },
      {
        name: "floorAuth",
        compatibilityDate: workerOptions.compatibilityDate,
        compatibilityFlags: workerOptions.compatibilityFlags,
        d1Databases: workerOptions.d1Databases,
        unsafeDirectSockets: direct,
        bindings: { JWT_SECRET_KEY: vars.JWT_SECRET_KEY },
        modules: [{ type: "ESModule", path: "floor-auth-worker.js", contents: readFileSync(input.floorAuthPath) }],
      },
      {
        name: "empty",
        compatibilityDate: workerOptions.compatibilityDate,
        compatibilityFlags: workerOptions.compatibilityFlags,
        unsafeDirectSockets: direct,
        modules: [{ type: "ESModule", path: "empty.js", contents: 'export default { fetch() { return new Response(""); } };' }],
      },
    ], input.inspectorPort);
    await mf.ready;

    const urls = {} as Record<WorkerName, string>;
    for (const name of ["app", "counting", "floor", "floorAuth", "appPrivate", "countingPrivate", "empty"] as const) {
      urls[name] = await directUrl(mf, name);
    }
    const db = (await mf.getD1Database("DB", "app")) as unknown as D1Like;
    const sql = async (query: string, ...params: unknown[]) => (await db.prepare(query).bind(...params).all()).results;
    const timedSql = async (query: string, ...params: unknown[]) => {
      const { results, meta } = await db.prepare(query).bind(...params).all();
      return { rows: results, durationMs: meta.duration, rowsWritten: meta.rows_written ?? 0 };
    };

    // The migrations wrangler would apply (`wrangler d1 migrations apply`): every .sql file of
    // migrations_dir in name order, split into statements by wrangler's own splitter.
    const migrationsDir = join(input.root, config.d1_databases.find((d) => d.binding === "DB")?.migrations_dir ?? "migrations");
    const migrations = readdirSync(migrationsDir).filter((name) => name.endsWith(".sql")).sort();
    for (const name of migrations) {
      const statements = unstable_splitSqlQuery(readFileSync(join(migrationsDir, name), "utf8"));
      await db.batch(statements.map((statement) => db.prepare(statement)));
    }

    const main = mf;
    return {
      urls,
      inspectorPort: input.inspectorPort,
      sql,
      timedSql,
      logs,
      migrations,
      settings: {
        compatibilityDate: workerOptions.compatibilityDate,
        compatibilityFlags: workerOptions.compatibilityFlags,
        d1Databases: Object.keys(workerOptions.d1Databases ?? {}),
        ratelimits: Object.keys(workerOptions.ratelimits ?? {}),
        vars: { ...vars, ...(vars.JWT_SECRET_KEY ? { JWT_SECRET_KEY: "(random per run)" } : {}) },
      },
      async replica() {
        const copy = temporaryDir("notes-bench-replica-");
        cpSync(persistDir, copy.path, { recursive: true });
        foldWriteAheadLogs(join(copy.path, "d1"));
        const second = instance(copy.path, [app]);
        try {
          await second.ready;
          return { url: await directUrl(second, "app"), dispose: () => shutDown(second, copy) };
        } catch (err) {
          await shutDown(second, copy).catch(() => {});
          throw err;
        }
      },
      dispose: () => shutDown(main, persisted),
    };
  } catch (err) {
    if (mf) await shutDown(mf, persisted).catch(() => {});
    else persisted.remove();
    throw err;
  }
}
