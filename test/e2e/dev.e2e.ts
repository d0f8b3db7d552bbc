/**
 * `npm run dev` (scripts/dev.ts) with settings that only `.dev.vars` gives (N9): the optional secrets and the
 * per-provider OAUTH_<N>_* settings, which `wrangler dev` alone drops once wrangler.toml declares `[secrets]`. Each
 * must take effect in the worker the script starts:
 * - TURNSTILE_SECRET_KEY: register demands a Turnstile token, and the secret reaches the verify URL (a fake here);
 * - MFA_ENCRYPTION_KEY: a TOTP secret is sealed under it (the box names its key); MFA_ENCRYPTION_KEY_PREVIOUS: a box
 *   sealed under it still opens, so the factor is confirmed;
 * - OAUTH_LOCAL_CLIENT_ID, _CLIENT_SECRET, _ISSUER: a whole web sign-in with the local OpenID provider
 *   (scripts/oauth-provider.ts); OAUTH_APPLE_CLIENT_ID, _ISSUER, _TEAM_ID, _KEY_ID, _PRIVATE_KEY: Apple's web flow
 *   starts (it answers 503 while one of the three of its client secret is missing);
 * - ADMIN_TOKEN: the admin API answers it (a 404 without); WEBHOOK_SECRET: the registration's event reaches a
 *   receiver here signed with it, as the `standardwebhooks` library verifies.
 * The script runs in a copy of the project in a temporary directory (its scripts and wrangler.toml copied; src/,
 * drizzle/ and node_modules linked), so its `.dev.vars`, mail catcher and local D1 are this test's, never the
 * developer's.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash, generateKeyPairSync, randomBytes, webcrypto } from "node:crypto";
import { copyFileSync, cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import {
  devSettings,
  LOCAL_REDIRECT_URL,
  startLocalProvider,
  type LocalProvider,
} from "../../scripts/oauth-provider.ts";
import { base32Decode, stepAt, totpAt } from "../../src/lib/totp.ts";
import { freePort, root, START_WORKER_TIMEOUT_MS, tail } from "./wrangler-dev.ts";

const tmp = mkdtempSync(join(tmpdir(), "notes-e2e-dev-"));
const wrangler = join(tmp, "node_modules/wrangler/bin/wrangler.js");
const MFA_KEY = randomBytes(32).toString("base64url");
const MFA_KEY_PREVIOUS = randomBytes(32).toString("base64url");
const TURNSTILE_SECRET = `turnstile-${randomBytes(8).toString("hex")}`;
const TURNSTILE_GOOD_TOKEN = "a-good-turnstile-token";
const PASSWORD = "correct horse battery";
const APPLE_CLIENT_ID = "com.example.notes.web";
const ADMIN_TOKEN = randomBytes(24).toString("hex");
const WEBHOOK_SECRET = `whsec_${randomBytes(32).toString("base64")}`;
/** How long the registration's event may take to arrive: the local queue's batch timeout, and a retry. */
const DELIVERY_WAIT_MS = 40_000;

let dev: ChildProcess | undefined;
let output = "";
let origin = "";
let provider: LocalProvider | undefined;
let siteverify: Server | undefined;
/** The secrets and tokens the fake Turnstile verify URL was sent. */
const verified: Array<{ secret: string | null; response: string | null }> = [];
let hooks: Server | undefined;
/** The webhook deliveries received: their headers and body. */
const deliveries: Array<{ headers: Record<string, string>; body: string }> = [];

/** A webhook receiver that keeps every delivery. */
async function startHooks(): Promise<string> {
  hooks = createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
    request.on("end", () => {
      const header = (name: string) => String(request.headers[name] ?? "");
      const headers = Object.fromEntries(
        ["webhook-id", "webhook-timestamp", "webhook-signature"].map((name) => [name, header(name)]),
      );
      deliveries.push({ headers, body });
      response.statusCode = 204;
      response.end();
    });
  });
  await new Promise<void>((resolve) => hooks!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`;
}

/** A fake Turnstile siteverify: the good token passes; it records what it was sent. */
async function startSiteverify(): Promise<string> {
  siteverify = createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
    request.on("end", () => {
      const form = new URLSearchParams(body);
      verified.push({ secret: form.get("secret"), response: form.get("response") });
      response.setHeader("Content-Type", "application/json");
      response.end(JSON.stringify({ success: form.get("response") === TURNSTILE_GOOD_TOKEN }));
    });
  });
  await new Promise<void>((resolve) => siteverify!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(siteverify.address() as AddressInfo).port}/siteverify`;
}

/** The project as `npm run dev` sees it, in `tmp`: what it writes is copied, what it only reads is linked. */
function copyProject(): void {
  cpSync(join(root, "scripts"), join(tmp, "scripts"), { recursive: true });
  for (const file of ["wrangler.toml", "package.json", "tsconfig.json", ".dev.vars.example"])
    copyFileSync(join(root, file), join(tmp, file));
  for (const dir of ["src", "drizzle", "node_modules"]) symlinkSync(join(root, dir), join(tmp, dir), "dir");
}

/** `.dev.vars` with every optional secret and the providers' settings, besides what `npm run dev` writes there. */
function writeDevVars(smtpPort: number, verifyUrl: string, issuer: string, hookUrl: string): void {
  const pem = generateKeyPairSync("ec", { namedCurve: "P-256" })
    .privateKey.export({ format: "pem", type: "pkcs8" })
    .toString()
    .trim();
  const settings: Record<string, string> = {
    JWT_SECRET_KEY: randomBytes(32).toString("base64url"),
    MAIL_EMAIL: "dev@localhost.test",
    MAIL_APP_PASSWORD: "devpassword0000x",
    SMTP_HOST: "127.0.0.1",
    SMTP_PORT: String(smtpPort),
    SMTP_SECURE: "false",
    TURNSTILE_SECRET_KEY: TURNSTILE_SECRET,
    TURNSTILE_VERIFY_URL: verifyUrl,
    MFA_ENCRYPTION_KEY: MFA_KEY,
    MFA_ENCRYPTION_KEY_PREVIOUS: MFA_KEY_PREVIOUS,
    ADMIN_TOKEN,
    WEBHOOK_URL: hookUrl,
    WEBHOOK_SECRET,
    ...devSettings(issuer),
    OAUTH_PROVIDERS: "local,apple",
    OAUTH_APPLE_CLIENT_ID: APPLE_CLIENT_ID,
    OAUTH_APPLE_ISSUER: issuer,
    OAUTH_APPLE_TEAM_ID: "TEAM123456",
    OAUTH_APPLE_KEY_ID: "KEY1234567",
    // One line, its line breaks written as \n, as a PEM is pasted into .dev.vars.
    OAUTH_APPLE_PRIVATE_KEY: `"${pem.replace(/\n/g, "\\n")}"`,
  };
  const lines = Object.entries(settings).map(([name, value]) => `${name}=${value}`);
  writeFileSync(join(tmp, ".dev.vars"), `${lines.join("\n")}\n`, { mode: 0o600 });
}

/** Runs `wrangler d1 execute DB --local` on the local D1 that `npm run dev` migrated: the rows of `sql`. */
function query(sql: string): Record<string, unknown>[] {
  const result = spawnSync(process.execPath, [wrangler, "d1", "execute", "DB", "--local", "--json", "--command", sql], {
    cwd: tmp,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    encoding: "utf8",
    timeout: 120_000,
  });
  if (result.status !== 0) throw new Error(`wrangler d1 execute failed:\n${tail(result.stdout + result.stderr)}`);
  return (JSON.parse(result.stdout) as { results: Record<string, unknown>[] }[])[0]!.results;
}

function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${origin}${path}`, {
    method,
    redirect: "manual",
    headers: { ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** The box format of src/lib/secret-box.ts, sealed here under `secret`: `v1.<key id>.<iv>.<data>`. */
async function sealUnder(secret: string, plain: Uint8Array): Promise<string> {
  const base = await webcrypto.subtle.importKey("raw", new TextEncoder().encode(secret), "HKDF", false, ["deriveKey"]);
  const key = await webcrypto.subtle.deriveKey(
    {
      name: "HKDF",
      hash: "SHA-256",
      salt: new Uint8Array(0),
      info: new TextEncoder().encode("notes-api mfa secret v1"),
    },
    base,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt"],
  );
  const iv = webcrypto.getRandomValues(new Uint8Array(12));
  const data = new Uint8Array(await webcrypto.subtle.encrypt({ name: "AES-GCM", iv }, key, plain));
  return `v1.${keyId(secret)}.${Buffer.from(iv).toString("base64url")}.${Buffer.from(data).toString("base64url")}`;
}

/** The key id a box sealed under `secret` names. */
function keyId(secret: string): string {
  return createHash("sha256").update(`key id\n${secret}`).digest("hex").slice(0, 12);
}

/** Waits until the dev server answers /openapi.json, or fails with what it printed. */
async function answering(deadline: number): Promise<void> {
  for (;;) {
    if (dev!.exitCode !== null || dev!.signalCode !== null)
      throw new Error(`npm run dev exited (${dev!.exitCode ?? dev!.signalCode}):\n${tail(output)}`);
    try {
      if ((await fetch(`${origin}/openapi.json`, { signal: AbortSignal.timeout(2_000) })).ok) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`npm run dev did not answer on ${origin}:\n${tail(output)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

before(
  async () => {
    copyProject();
    provider = await startLocalProvider({ port: 0, email: "dev-user@example.test", unverified: false });
    writeDevVars(await freePort(), await startSiteverify(), provider.issuer, await startHooks());
    const [port, inspectorPort] = [await freePort(), await freePort()];
    origin = `http://127.0.0.1:${port}`;
    const args = ["--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspectorPort)];
    // Its own process group, so that the script, wrangler and workerd stop together.
    dev = spawn(process.execPath, [join(tmp, "scripts/dev.ts"), ...args, "--show-interactive-dev-session=false"], {
      cwd: tmp,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", FORCE_COLOR: "0" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    dev.stdout!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    dev.stderr!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    await answering(Date.now() + START_WORKER_TIMEOUT_MS - 30_000);
  },
  { timeout: START_WORKER_TIMEOUT_MS },
);

after(async () => {
  if (dev?.pid && dev.exitCode === null && dev.signalCode === null) {
    const exited = new Promise((resolve) => dev!.once("exit", resolve));
    process.kill(-dev.pid, "SIGTERM");
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    try {
      process.kill(-dev.pid, "SIGKILL");
    } catch {
      // The group is gone already.
    }
  }
  await provider?.stop();
  await new Promise<void>((resolve) => (siteverify ? siteverify.close(() => resolve()) : resolve()));
  await new Promise<void>((resolve) => (hooks ? hooks.close(() => resolve()) : resolve()));
  rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
});

test("npm run dev names what it passes on from .dev.vars, and wrangler lists each as hidden", () => {
  const passed = /\[dev\] Passing on from \.dev\.vars what wrangler reads only when declared: (.*)\.\n/.exec(output);
  assert.deepEqual(passed?.[1]?.split(", ").sort(), [
    "ADMIN_TOKEN",
    "MFA_ENCRYPTION_KEY",
    "MFA_ENCRYPTION_KEY_PREVIOUS",
    "OAUTH_APPLE_CLIENT_ID",
    "OAUTH_APPLE_ISSUER",
    "OAUTH_APPLE_KEY_ID",
    "OAUTH_APPLE_PRIVATE_KEY",
    "OAUTH_APPLE_TEAM_ID",
    "OAUTH_LOCAL_CLIENT_ID",
    "OAUTH_LOCAL_CLIENT_SECRET",
    "OAUTH_LOCAL_ISSUER",
    "TURNSTILE_SECRET_KEY",
    "WEBHOOK_SECRET",
  ]);
  assert.match(output, /env\.TURNSTILE_SECRET_KEY \("\(hidden\)"\)/);
  assert.ok(!output.includes(TURNSTILE_SECRET), "the secret's value is not printed");
  assert.ok(!output.includes(MFA_KEY), "the key's value is not printed");
});

test("TURNSTILE_SECRET_KEY from .dev.vars: register demands a Turnstile token, checked with that secret", async () => {
  const email = `turnstile-${randomBytes(4).toString("hex")}@example.com`;
  const refused = await call("POST", "/auth/register", { email, password: PASSWORD });
  assert.equal(refused.status, 400);
  assert.equal(
    await refused.text(),
    "A Turnstile token is required: send it in the cf-turnstile-response field or header.",
  );
  const registered = await call(
    "POST",
    "/auth/register",
    { email, password: PASSWORD },
    { "cf-turnstile-response": TURNSTILE_GOOD_TOKEN },
  );
  assert.equal(registered.status, 201);
  assert.deepEqual(verified.at(-1), { secret: TURNSTILE_SECRET, response: TURNSTILE_GOOD_TOKEN });
});

test("MFA_ENCRYPTION_KEY seals TOTP secrets, and a box sealed under MFA_ENCRYPTION_KEY_PREVIOUS still opens", async () => {
  const email = `mfa-${randomBytes(4).toString("hex")}@example.com`;
  const turnstile = { "cf-turnstile-response": TURNSTILE_GOOD_TOKEN };
  assert.equal((await call("POST", "/auth/register", { email, password: PASSWORD }, turnstile)).status, 201);
  const code = await mailedCode(email);
  assert.equal((await call("POST", "/auth/verify-email", { email, token: code })).status, 200);
  const login = (await (await call("POST", "/auth/login", { email, password: PASSWORD })).json()) as { token: string };
  const bearer = { Authorization: `Bearer ${login.token}` };
  const enrolled = await call("POST", "/auth/mfa/totp", { password: PASSWORD }, bearer);
  assert.equal(enrolled.status, 200);
  const { secret } = (await enrolled.json()) as { secret: string };

  const where = `user_id = (SELECT id FROM users WHERE email = '${email}')`;
  const [stored] = query(`SELECT sealed_secret FROM mfa_factors WHERE ${where}`);
  assert.equal(String(stored?.sealed_secret).split(".")[1], keyId(MFA_KEY));
  // The same secret sealed under the previous key, as a factor enrolled before a rotation holds it.
  const previous = await sealUnder(MFA_KEY_PREVIOUS, base32Decode(secret));
  query(`UPDATE mfa_factors SET sealed_secret = '${previous}' WHERE ${where}`);
  const code2 = await totpAt(base32Decode(secret), stepAt(Date.now()));
  assert.equal((await call("POST", "/auth/mfa/totp/confirm", { code: code2 }, bearer)).status, 200);
});

test("OAUTH_LOCAL_* from .dev.vars: a whole web sign-in with the local provider; OAUTH_APPLE_*: Apple's web flow starts", async () => {
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const params = `redirect_uri=${encodeURIComponent(LOCAL_REDIRECT_URL)}&code_challenge=${challenge}&code_challenge_method=S256`;
  const started = await call("GET", `/auth/oauth/local/authorize?${params}`);
  assert.equal(started.status, 302);
  const toProvider = new URL(started.headers.get("location")!);
  assert.equal(toProvider.origin, new URL(provider!.issuer).origin);
  assert.equal(toProvider.searchParams.get("client_id"), "local-client");
  const atProvider = await fetch(toProvider, { redirect: "manual" });
  assert.equal(atProvider.status, 302);
  const back = new URL(atProvider.headers.get("location")!);
  // The token exchange, with the client secret, happens here.
  const callback = await call("GET", `${back.pathname}${back.search}`);
  assert.equal(callback.status, 302, tail(output));
  const app = new URL(callback.headers.get("location")!);
  assert.equal(`${app.origin}${app.pathname}`, LOCAL_REDIRECT_URL);
  const tokens = await call("POST", "/auth/oauth/token", {
    code: app.searchParams.get("code"),
    code_verifier: verifier,
  });
  assert.equal(tokens.status, 200);

  const apple = await call("GET", `/auth/oauth/apple/authorize?${params}`);
  assert.equal(apple.status, 302, await apple.text());
  const toApple = new URL(apple.headers.get("location")!);
  assert.equal(toApple.searchParams.get("client_id"), APPLE_CLIENT_ID);
  assert.equal(toApple.searchParams.get("response_mode"), "form_post");
});

test("ADMIN_TOKEN from .dev.vars opens the admin API; WEBHOOK_SECRET signs the deliveries", async () => {
  const email = `operators-${randomBytes(4).toString("hex")}@example.com`;
  const turnstile = { "cf-turnstile-response": TURNSTILE_GOOD_TOKEN };
  assert.equal((await call("POST", "/auth/register", { email, password: PASSWORD }, turnstile)).status, 201);
  const found = await call("GET", `/admin/users?email=${encodeURIComponent(email)}`, undefined, {
    Authorization: `Bearer ${ADMIN_TOKEN}`,
  });
  assert.equal(found.status, 200);
  const { users } = (await found.json()) as { users: { email: string }[] };
  assert.deepEqual(
    users.map((user) => user.email),
    [email],
  );

  const deadline = Date.now() + DELIVERY_WAIT_MS;
  const registered = () => deliveries.find((delivery) => delivery.body.includes(JSON.stringify(email)));
  while (!registered() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
  const delivery = registered();
  assert.ok(delivery, `no delivery of the registration:\n${tail(output)}`);
  const event = new Webhook(WEBHOOK_SECRET).verify(delivery.body, delivery.headers) as { type: string };
  assert.equal(event.type, "user.registered");
});

/** The code of the verification mail to `email` that the dev server's mail catcher printed. */
async function mailedCode(email: string): Promise<string> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const at = output.lastIndexOf(email);
    const code = at >= 0 ? /Your verification code is: (\d{6})/.exec(output.slice(at))?.[1] : undefined;
    if (code) return code;
    if (Date.now() > deadline) throw new Error(`no verification mail to ${email} printed:\n${tail(output)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
