/**
 * A real `wrangler dev` for the end-to-end tests (docs.e2e.ts, readme.e2e.ts): on a free loopback port,
 * with its own temporary D1 (migrated first with `wrangler d1 migrations apply DB --local`) and none of
 * the developer's local settings: `--env-file` points at an empty file, so `.dev.vars` is not read, and
 * CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV=false keeps `.env` and this shell's environment out too (and any
 * env file: the test's own settings go as `--var`s). The worker sees wrangler.toml's [vars] and the `--var`s.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../..", import.meta.url));
// wrangler's JS entry run with this same Node (22): the `.bin` shim would use whatever `node` is on PATH.
const wrangler = join(root, "node_modules/wrangler/bin/wrangler.js");
const STARTUP_TIMEOUT_MS = 60_000;

/** A port the OS just handed out on loopback (bound to port 0, then released). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port from the OS");
  return address.port;
}

export function tail(text: string, lines = 40): string {
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

export interface DevWorker {
  origin: string;
  /** Everything wrangler printed so far. */
  output(): string;
  /** Stops wrangler and its workerd, and removes the temporary directory. */
  stop(): Promise<void>;
}

/** Starts `wrangler dev` with `vars` (secrets too) over wrangler.toml's [vars]. */
export async function startDevWorker(vars: Record<string, string>): Promise<DevWorker> {
  const tmp = mkdtempSync(join(tmpdir(), "notes-e2e-"));
  const persistDir = join(tmp, "state");
  // No metrics, no colours, logs in our temp dir, no secrets from .env or process.env.
  const env = {
    ...process.env,
    CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV: "false",
    WRANGLER_SEND_METRICS: "false",
    WRANGLER_SEND_ERROR_REPORTS: "false",
    WRANGLER_LOG_PATH: join(tmp, "wrangler-logs"),
    NO_COLOR: "1",
    FORCE_COLOR: "0",
  };
  let child: ChildProcess | undefined;
  let output = "";
  let exited: Promise<void> = Promise.resolve();

  const stopNow = () => {
    // Ctrl+C reaches this process but not wrangler, which runs in its own process group.
    if (child?.pid && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
  };
  const interrupted = () => {
    stopNow();
    rmSync(tmp, { recursive: true, force: true });
    process.exit(130);
  };
  process.once("exit", stopNow);
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);

  async function stop(): Promise<void> {
    process.off("exit", stopNow);
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
    if (child?.pid && child.exitCode === null && child.signalCode === null) {
      const group = -child.pid;
      try {
        process.kill(group, "SIGTERM");
        const stopped = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5_000))]);
        // wrangler may exit before its workerd does; whatever is left in the group goes now.
        process.kill(group, stopped ? "SIGTERM" : "SIGKILL");
      } catch {
        // nothing left
      }
    }
    rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
  }

  try {
    const envFilePath = join(tmp, "empty.env");
    writeFileSync(envFilePath, "");
    const migrate = spawnSync(process.execPath, [wrangler, "d1", "migrations", "apply", "DB", "--local", "--persist-to", persistDir], {
      cwd: root,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
      timeout: 30_000,
    });
    if (migrate.status !== 0) {
      throw new Error(`wrangler d1 migrations apply failed (status ${migrate.status}):\n${tail(migrate.stdout + migrate.stderr)}`);
    }
    const port = await freePort();
    const inspectorPort = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const args = [
      wrangler, "dev",
      "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspectorPort),
      "--persist-to", persistDir,
      "--env-file", envFilePath,
      ...Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
      "--show-interactive-dev-session=false",
    ];
    // Its own process group, so the whole tree (wrangler, workerd) can be stopped with one signal.
    const started = spawn(process.execPath, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    child = started;
    exited = new Promise((resolve) => started.once("exit", () => resolve()));
    started.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    started.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    await waitUntilAnswering(started, origin, () => output);
    return { origin, output: () => output, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function waitUntilAnswering(child: ChildProcess, origin: string, output: () => string): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`wrangler dev exited (${child.exitCode ?? child.signalCode}) before answering:\n${tail(output())}`);
    }
    try {
      const response = await fetch(`${origin}/openapi.json`, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`wrangler dev did not answer on ${origin} within ${STARTUP_TIMEOUT_MS / 1000} s:\n${tail(output())}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
