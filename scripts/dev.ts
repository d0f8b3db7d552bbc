/**
 * `npm run dev`: local development with no setup and no mail account.
 *   1. creates `.dev.vars` from `.dev.vars.example` on first run, with a random JWT secret;
 *   2. applies the D1 migrations to the local database, printing one line (everything on failure);
 *   3. starts the mail catcher when SMTP_HOST is local, so verification codes show up here;
 *   4. runs `wrangler dev` with every extra argument (`npm run dev -- --port 9000`).
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { constants } from "node:os";
import { fileURLToPath } from "node:url";
import { parseEnv } from "node:util";
import { startMailCatcher, type MailCatcher } from "./mail-catcher.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
process.chdir(root);

// Run wrangler's JS entry with this same Node (22), not through the `.bin` shim: the shim finds
// `node` on PATH, which is the system Node 20 when this script is not started by npm.
const wrangler = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));

function createDevVars(): void {
  if (existsSync(".dev.vars")) return;
  const secret = randomBytes(32).toString("base64url");
  const text = readFileSync(".dev.vars.example", "utf8").replace(/^JWT_SECRET_KEY=.*$/m, `JWT_SECRET_KEY=${secret}`);
  try {
    // "wx": never overwrite, even if another process created the file a moment ago. 0600: it holds secrets.
    writeFileSync(".dev.vars", text, { flag: "wx", mode: 0o600 });
    console.log("[dev] Created .dev.vars from .dev.vars.example with a random JWT_SECRET_KEY.");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
}

function fail(lines: string[]): never {
  console.error(lines.map((line) => `[dev] ${line}`).join("\n"));
  process.exit(1);
}

/** One line when all goes well; wrangler's whole output (its tables) only when something fails. */
function applyMigrations(): void {
  // stdin is not a terminal, so wrangler skips its confirmation prompt (it answers yes, as in CI).
  const result = spawnSync(process.execPath, [wrangler, "d1", "migrations", "apply", "DB", "--local"], {
    stdio: ["ignore", "pipe", "pipe"],
    encoding: "utf8",
  });
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}${result.error ? `${String(result.error)}\n` : ""}`;
  if (result.status !== 0) {
    console.error(output);
    fail(["Applying the local D1 migrations failed (wrangler's output above); not starting the worker."]);
  }
  // Without a terminal wrangler prints its status table again after each migration: count names once.
  const applied = [...new Set(Array.from(output.matchAll(/│ (\S+\.sql)\s+│ ✅/g), (match) => match[1]))];
  if (applied.length === 1) console.log(`[dev] D1: 1 migration applied (${applied[0]}).`);
  else if (applied.length > 1) console.log(`[dev] D1: ${applied.length} migrations applied (${applied[0]} to ${applied.at(-1)}).`);
  else if (output.includes("No migrations to apply")) console.log("[dev] D1: up to date, no migration to apply.");
  else console.log(output); // neither: show what wrangler said rather than guess
}

async function maybeStartCatcher(): Promise<MailCatcher | null> {
  const vars = parseEnv(readFileSync(".dev.vars", "utf8"));
  const host = vars.SMTP_HOST?.trim() ?? "";
  if (host !== "127.0.0.1" && host !== "localhost") return null;
  const port = Number(vars.SMTP_PORT ?? 2525);
  return startMailCatcher(host, port);
}

createDevVars();
applyMigrations();
const catcher = await maybeStartCatcher();

const child = spawn(process.execPath, [wrangler, "dev", ...process.argv.slice(2)], { stdio: "inherit" });

// On Ctrl+C the terminal signals wrangler too; forwarding matters when only this process is signalled.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => child.kill(signal));
}

child.on("exit", (code, signal) => {
  const exitCode = code ?? 128 + (signal ? constants.signals[signal] : 1);
  // Don't let a lingering SMTP connection (or a failing close) hold up the exit.
  const closed = catcher?.close().catch(() => {});
  void Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1000).unref())]).then(() => process.exit(exitCode));
});
