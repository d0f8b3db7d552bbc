/**
 * `npm run dev`: local development with no setup and no mail account.
 *   1. creates `.dev.vars` from `.dev.vars.example` on first run, with a random JWT secret;
 *   2. stops with a clear message when the worker's port is taken (most often by another `npm run dev`),
 *      rather than letting wrangler move to another port; when SMTP_HOST is local and its port taken,
 *      reads what answers there: another `npm run dev`'s catcher stops us too (it would get this worker's
 *      mail), the developer's own mail server (Mailpit, MailHog, smtp4dev…) is used instead of ours;
 *   3. starts the mail catcher when SMTP_HOST is local and no server of the developer's is there, so
 *      verification codes show up here;
 *   4. applies the D1 migrations to the local database, printing one line (everything on failure);
 *   5. runs `wrangler dev` with every extra argument (`npm run dev -- --port 9000`), and every setting of
 *      `.dev.vars` that wrangler would drop (undeclaredSettings).
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { constants } from "node:os";
import { fileURLToPath } from "node:url";
import { parseEnv } from "node:util";
import { planMailCatcher, startMailCatcher, type MailCatcher } from "./mail-catcher.ts";
import { portInUse } from "./ports.ts";
import { wranglerNames } from "./wrangler-toml.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
process.chdir(root);

// Run wrangler's JS entry with this same Node (22), not through the `.bin` shim: the shim finds
// `node` on PATH, which is the system Node 20 when this script is not started by npm.
const wrangler = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));
// wrangler dev's own default (wrangler.toml sets no [dev] port).
const DEFAULT_WORKER_PORT = 8787;

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

/** The values of every `--name value` and `--name=value` among wrangler's arguments. */
function argumentsOf(args: string[], name: string): string[] {
  return args.flatMap((arg, i) => {
    if (arg === name) return args[i + 1] === undefined ? [] : [args[i + 1]!];
    return arg.startsWith(`${name}=`) ? [arg.slice(name.length + 1)] : [];
  });
}

/** The value of `--name value` or `--name=value` among wrangler's arguments, if given. */
function argument(args: string[], name: string): string | undefined {
  return argumentsOf(args, name)[0];
}

function fail(lines: string[]): never {
  console.error(lines.map((line) => `[dev] ${line}`).join("\n"));
  process.exit(1);
}

/** The mail catcher's address when `.dev.vars` sends mail to this machine, else null (real SMTP). */
function catcherAddress(): { host: string; port: number } | null {
  const vars = parseEnv(readFileSync(".dev.vars", "utf8"));
  const host = vars.SMTP_HOST?.trim() ?? "";
  if (host !== "127.0.0.1" && host !== "localhost") return null;
  const port = Number(vars.SMTP_PORT ?? 2525);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    fail([`SMTP_PORT in .dev.vars is not a port number: ${vars.SMTP_PORT}`]);
  return { host, port };
}

/**
 * wrangler moves to the next free port without asking when its port is taken, and the worker would then
 * mail a catcher this script does not own: stop before anything starts, and say why.
 */
async function checkWorkerPort(args: string[], catcher: { host: string; port: number } | null): Promise<void> {
  const ip = argument(args, "--ip") ?? "127.0.0.1";
  const port = Number(argument(args, "--port") ?? DEFAULT_WORKER_PORT);
  if (Number.isInteger(port) && port > 0 && (await portInUse(ip === "localhost" ? "127.0.0.1" : ip, port))) {
    fail([
      `port ${port} is in use: is another \`npm run dev\` running? Stop it, or pick another port: npm run dev -- --port ${port + 1}`,
      ...(catcher ? ["(a second instance also needs its own mail catcher port: another SMTP_PORT in .dev.vars)"] : []),
    ]);
  }
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
  else if (applied.length > 1)
    console.log(`[dev] D1: ${applied.length} migrations applied (${applied[0]} to ${applied.at(-1)}).`);
  else if (output.includes("No migrations to apply")) console.log("[dev] D1: up to date, no migration to apply.");
  else console.log(output); // neither: show what wrangler said rather than guess
}

/**
 * Mail to this machine (SMTP_HOST local): our catcher, started; or the developer's own server, used as it is (null).
 */
async function localMail(at: { host: string; port: number } | null): Promise<MailCatcher | null> {
  if (!at) return null;
  const plan = await planMailCatcher(at.host, at.port);
  if ("refuse" in plan) fail(plan.refuse);
  if ("useRunning" in plan) {
    console.log(
      `[dev] Your mail server answers on ${at.host}:${at.port} ("${plan.useRunning}"): the mail goes there; not starting our catcher.`,
    );
    return null;
  }
  return (
    (await startMailCatcher(at.host, at.port)) ??
    fail(["Not starting the worker without its mail catcher (see the warning above)."])
  );
}

/**
 * Passkeys are accepted only from the origins of WEBAUTHN_ORIGINS, whose localhost default is port 8787: on
 * another port (`-- --port 9000`) the worker is told http://localhost:<port>, unless .dev.vars names origins.
 */
function passkeyOrigin(args: string[]): string[] {
  const port = argument(args, "--port");
  const vars = parseEnv(readFileSync(".dev.vars", "utf8"));
  if (port === undefined || vars.WEBAUTHN_ORIGINS?.trim() || vars.WEBAUTHN_RP_ID?.trim() !== "localhost") return [];
  return ["--var", `WEBAUTHN_ORIGINS:http://localhost:${port}`];
}

/**
 * Once wrangler.toml has `[secrets]`, `wrangler dev` takes from `.dev.vars` only the names wrangler.toml declares
 * (`[vars]`, `[secrets] required`) and drops the rest without a word: the optional secrets (TURNSTILE_SECRET_KEY,
 * MFA_ENCRYPTION_KEY…) and every OAUTH_<N>_* setting. Those are passed on as `--var NAME:value` (wrangler lists them
 * as hidden), unless the command line gives the name itself. The file is the one wrangler reads: those of
 * `--env-file` when given, else `.dev.vars.<env>` for `--env` when it exists, else `.dev.vars`.
 */
function undeclaredSettings(args: string[]): string[] {
  const env = argument(args, "--env") ?? argument(args, "-e");
  const envFiles = argumentsOf(args, "--env-file");
  const files =
    envFiles.length > 0 ? envFiles : env && existsSync(`.dev.vars.${env}`) ? [`.dev.vars.${env}`] : [".dev.vars"];
  const settings: Record<string, string> = {};
  for (const file of files) if (existsSync(file)) Object.assign(settings, parseEnv(readFileSync(file, "utf8")));
  const { vars, secrets } = wranglerNames(readFileSync("wrangler.toml", "utf8"));
  const given = new Set(argumentsOf(args, "--var").map((pair) => pair.split(":")[0]));
  const passed = Object.keys(settings).filter((name) => !vars.has(name) && !secrets.has(name) && !given.has(name));
  if (passed.length === 0) return [];
  console.log(
    `[dev] Passing on from ${files.join(", ")} what wrangler reads only when declared: ${passed.join(", ")}.`,
  );
  return passed.flatMap((name) => ["--var", `${name}:${settings[name]}`]);
}

createDevVars();
const wranglerArgs = process.argv.slice(2);
const catcherAt = catcherAddress();
await checkWorkerPort(wranglerArgs, catcherAt);
const catcher = await localMail(catcherAt);
applyMigrations();

const child = spawn(
  process.execPath,
  [wrangler, "dev", ...wranglerArgs, ...passkeyOrigin(wranglerArgs), ...undeclaredSettings(wranglerArgs)],
  { stdio: "inherit" },
);

// On Ctrl+C the terminal signals wrangler too; forwarding matters when only this process is signalled.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => child.kill(signal));
}

child.on("exit", (code, signal) => {
  const exitCode = code ?? 128 + (signal ? constants.signals[signal] : 1);
  // Don't let a lingering SMTP connection (or a failing close) hold up the exit.
  const closed = catcher?.close().catch(() => {});
  void Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1000).unref())]).then(() =>
    process.exit(exitCode),
  );
});
