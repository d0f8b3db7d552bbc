/**
 * The worker as the browser tests run it: `wrangler dev` on a free loopback port, with its own temporary D1
 * (migrated first with `wrangler d1 migrations apply DB --local`) and none of the developer's local settings:
 * `--env-file` points at an empty file, so `.dev.vars` is not read, and CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV=false
 * keeps `.env` and this shell's environment out too. The worker sees wrangler.toml's [vars] and the `vars`
 * given here only; mail is unconfigured. Shared by docs.e2e.ts and passkeys.e2e.ts.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";

export const root = fileURLToPath(new URL("../..", import.meta.url));
// wrangler's JS entry run with this same Node (22): the `.bin` shim would use whatever `node` is on PATH.
const wrangler = join(root, "node_modules/wrangler/bin/wrangler.js");
// Generous: on a machine shared with other builds one wrangler command has taken close to a minute and a half
// (a migration, a d1 execute); a quiet machine takes a few seconds, so these only bound a hang.
const STARTUP_TIMEOUT_MS = 120_000;
const COMMAND_TIMEOUT_MS = 120_000;
/** What a test's `before` should allow for startWorker: its migration and its startup, each at their bound. */
export const START_WORKER_TIMEOUT_MS = COMMAND_TIMEOUT_MS + STARTUP_TIMEOUT_MS + 30_000;

export const chromiumPath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Headless Chromium (`chromiumPath`: Debian's package, or $CHROMIUM_PATH; never downloaded) with a profile in the
 * worker's temporary directory, and its first page, whose waits give up after 15 s.
 */
export async function openChromium(
  worker: Worker,
  options: { viewport?: { width: number; height: number }; acceptDownloads?: boolean } = {},
): Promise<{ context: BrowserContext; page: Page }> {
  if (!existsSync(chromiumPath)) {
    throw new Error(
      `No Chromium at ${chromiumPath}: apt-get install chromium (Debian), or set CHROMIUM_PATH to a Chromium or Chrome binary.`,
    );
  }
  const context = await chromium.launchPersistentContext(join(worker.tmp, "chromium-profile"), {
    executablePath: chromiumPath,
    headless: true,
    args: CHROMIUM_ARGS,
    ...options,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(15_000);
  return { context, page };
}

/** A port the OS just handed out on loopback (bound to port 0, then released). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port from the OS");
  return address.port;
}

/** The last `lines` lines of `text`: what an error shows of wrangler's output. */
export function tail(text: string, lines = 40): string {
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

export interface Worker {
  /** The temporary directory of this run (D1 state, logs, a browser profile may go there too). */
  tmp: string;
  port: number;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** Everything wrangler printed so far. */
  output(): string;
  /** Runs `wrangler d1 execute DB --local` on the worker's database: the rows of `sql`. */
  query(sql: string): Record<string, unknown>[];
  /** Stops wrangler and workerd, and removes the temporary directory. */
  stop(): Promise<void>;
}

/**
 * Starts the worker with `vars` (`--var NAME:value`) on port `port` (a free one by default), once it answers
 * /openapi.json.
 */
export async function startWorker(vars: Record<string, string>, port?: number): Promise<Worker> {
  const tmp = mkdtempSync(join(tmpdir(), "notes-e2e-"));
  const persistDir = join(tmp, "state");
  const emptyEnvFile = join(tmp, "empty.env");
  writeFileSync(emptyEnvFile, "");
  // wrangler's environment: no metrics, no colours, logs in our temp dir, no secrets from .env or process.env.
  const env = {
    ...process.env,
    CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV: "false",
    WRANGLER_SEND_METRICS: "false",
    WRANGLER_SEND_ERROR_REPORTS: "false",
    WRANGLER_LOG_PATH: join(tmp, "wrangler-logs"),
    NO_COLOR: "1",
    FORCE_COLOR: "0",
  };
  const run = (args: string[]) =>
    spawnSync(process.execPath, [wrangler, ...args], {
      cwd: root,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
      timeout: COMMAND_TIMEOUT_MS,
    });

  const migrate = run(["d1", "migrations", "apply", "DB", "--local", "--persist-to", persistDir]);
  if (migrate.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(
      `wrangler d1 migrations apply failed (status ${migrate.status}):\n${tail(migrate.stdout + migrate.stderr)}`,
    );
  }

  const workerPort = port ?? (await freePort());
  const inspectorPort = await freePort();
  const args = [
    wrangler,
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(workerPort),
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    persistDir,
    "--env-file",
    emptyEnvFile,
    ...Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
    "--show-interactive-dev-session=false",
  ];
  // Its own process group, so the whole tree (wrangler, workerd) can be stopped with one signal.
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: root,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let output = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));

  const kill = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
      return true;
    } catch {
      return false; // the group is gone already
    }
  };
  // Ctrl+C reaches this process but not wrangler, which runs in its own process group: stop it from here.
  const killNow = () => void (child.exitCode === null && child.signalCode === null && kill("SIGKILL"));
  const interrupted = () => {
    killNow();
    rmSync(tmp, { recursive: true, force: true });
    process.exit(130);
  };
  process.once("exit", killNow);
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, interrupted);
  const stop = async () => {
    process.off("exit", killNow);
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.off(signal, interrupted);
    if (child.pid && child.exitCode === null && child.signalCode === null && kill("SIGTERM")) {
      const stopped = await Promise.race([
        exited.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 5_000)),
      ]);
      // wrangler may exit before its workerd does; whatever is left in the group goes now.
      kill(stopped ? "SIGTERM" : "SIGKILL");
    }
    rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
  };

  const origin = `http://127.0.0.1:${workerPort}`;
  const worker: Worker = {
    tmp,
    port: workerPort,
    origin,
    output: () => output,
    query: (sql) => {
      const result = run(["d1", "execute", "DB", "--local", "--persist-to", persistDir, "--json", "--command", sql]);
      if (result.status !== 0) throw new Error(`wrangler d1 execute failed:\n${tail(result.stdout + result.stderr)}`);
      return (JSON.parse(result.stdout) as { results: Record<string, unknown>[] }[])[0]!.results;
    },
    stop,
  };
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`wrangler dev exited (${child.exitCode ?? child.signalCode}) before answering:\n${tail(output)}`);
    }
    try {
      const response = await fetch(`${origin}/openapi.json`, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) return worker;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(
        `wrangler dev did not answer on ${origin} within ${STARTUP_TIMEOUT_MS / 1000} s:\n${tail(output)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
