/**
 * `npm run test:e2e`: a passkey registered and used in a real browser against a real `wrangler dev`.
 *
 * - Starts the worker (wrangler-dev.ts: a free loopback port, its own temporary D1, no local settings) with
 *   WEBAUTHN_RP_ID=localhost and WEBAUTHN_ORIGINS=http://localhost:<port>, and a JWT secret of this run.
 * - Makes a verified account through the API (mail is unconfigured: the code is read from the worker's D1).
 * - Gives headless Chromium a virtual authenticator through the Chrome DevTools Protocol (WebAuthn domain:
 *   CTAP2, internal, resident keys, user verification, the user always verified), opens /docs on
 *   http://localhost:<port>, and from that page registers a passkey with navigator.credentials.create() and
 *   the options the API answers (201), then signs in with navigator.credentials.get() (200), as a web app does.
 * - Follows docs/passkeys.md's "Try it from /docs" as a newcomer does: signs in with the page's own login form,
 *   then runs the recipe's ```js blocks in the page, as pasted into its console, and reads what they log.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { BrowserContext, CDPSession, Page } from "playwright-core";
import { freePort, root, START_WORKER_TIMEOUT_MS, startWorker, type Worker, openChromium } from "./wrangler-dev.ts";

const PASSWORD = "correct horse battery";
const email = `passkey-${randomBytes(6).toString("hex")}@example.com`;

/** What the page's code uses of the browser's WebAuthn API (this file is compiled without the DOM's types). */
interface WebAuthnPage {
  PublicKeyCredential: {
    parseCreationOptionsFromJSON(options: unknown): unknown;
    parseRequestOptionsFromJSON(options: unknown): unknown;
  };
  navigator: {
    credentials: {
      create(options: { publicKey: unknown }): Promise<{ toJSON(): unknown }>;
      get(options: { publicKey: unknown }): Promise<{ toJSON(): unknown }>;
    };
  };
}

let worker: Worker | undefined;
let context: BrowserContext | undefined;
let page: Page;
let cdp: CDPSession;
let origin = "";
let accessToken = "";
let authenticatorId = "";

/** A request to the API from Node, its status and body (JSON when it is). */
async function api(
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${origin}${path}`, {
    method,
    headers: { "Content-Type": "application/json", ...(token && { Authorization: `Bearer ${token}` }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: response.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(text) : text,
  };
}

before(
  async () => {
    const port = await freePort();
    // The RP ID is localhost: the page must be opened by that name (127.0.0.1 is not a valid RP ID).
    origin = `http://localhost:${port}`;
    // bcrypt at cost 4: the account is made for the test, not to measure.
    worker = await startWorker(
      {
        WEBAUTHN_RP_ID: "localhost",
        WEBAUTHN_ORIGINS: origin,
        JWT_SECRET_KEY: randomBytes(32).toString("base64url"),
        BCRYPT_COST: "4",
      },
      port,
    );
    ({ context, page } = await openChromium(worker));
    cdp = await context.newCDPSession(page);
    await cdp.send("WebAuthn.enable", { enableUI: false });
    const added = await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: {
        protocol: "ctap2",
        transport: "internal",
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    authenticatorId = added.authenticatorId;
    await page.goto(`${origin}/docs`);
  },
  { timeout: START_WORKER_TIMEOUT_MS },
);

after(async () => {
  try {
    await context?.close();
  } finally {
    await worker?.stop();
  }
});

test("an account is made and verified through the API", async () => {
  assert.equal((await api("POST", "/auth/register", { email, password: PASSWORD })).status, 201);
  const [row] = worker!.query(
    `SELECT code FROM one_time_codes WHERE user_id = (SELECT id FROM users WHERE email = '${email}')`,
  );
  assert.ok(row, "no verification code stored");
  assert.equal((await api("POST", "/auth/verify-email", { email, token: row.code })).status, 200);
  const login = await api("POST", "/auth/login", { email, password: PASSWORD });
  assert.equal(login.status, 200);
  accessToken = (login.body as { token: string }).token;
});

test("the page registers a passkey with navigator.credentials.create() and the API's options: 201", async () => {
  assert.ok(accessToken, "needs the account of the previous test");
  const options = await api("POST", "/auth/passkeys/register/options", { password: PASSWORD }, accessToken);
  assert.equal(options.status, 200, JSON.stringify(options.body));
  const result = await page.evaluate(
    async ({ options, token }) => {
      const browser = globalThis as unknown as WebAuthnPage;
      const publicKey = browser.PublicKeyCredential.parseCreationOptionsFromJSON(options);
      const credential = await browser.navigator.credentials.create({ publicKey });
      const response = await fetch("/auth/passkeys/register/verify", {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
        body: JSON.stringify({ response: credential.toJSON(), name: "Chromium" }),
      });
      return { status: response.status, body: (await response.json()) as unknown };
    },
    { options: (options.body as { options: unknown }).options, token: accessToken },
  );
  assert.equal(result.status, 201, JSON.stringify(result.body));
  assert.deepEqual(Object.keys(result.body as object), [
    "id",
    "name",
    "created_at",
    "last_used_at",
    "backed_up",
    "counter_regressed_at",
  ]);
  const added = result.body as { name: string; counter_regressed_at: string | null };
  assert.equal(added.name, "Chromium");
  assert.equal(added.counter_regressed_at, null);
  // The authenticator holds it as a discoverable credential for this RP ID.
  const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
  assert.equal(credentials.length, 1);
  assert.equal(credentials[0]!.isResidentCredential, true);
  assert.equal(credentials[0]!.rpId, "localhost");
});

test("the page signs in with navigator.credentials.get(), no address typed: 200 with a login's answer", async () => {
  const result = await page.evaluate(async () => {
    const optionsResponse = await fetch("/auth/passkeys/login/options", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: "{}",
    });
    const { options } = (await optionsResponse.json()) as { options: unknown };
    const browser = globalThis as unknown as WebAuthnPage;
    const publicKey = browser.PublicKeyCredential.parseRequestOptionsFromJSON(options);
    const credential = await browser.navigator.credentials.get({ publicKey });
    const response = await fetch("/auth/passkeys/login/verify", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ response: credential.toJSON() }),
    });
    return { status: response.status, body: (await response.json()) as unknown };
  });
  assert.equal(result.status, 200, JSON.stringify(result.body));
  const tokens = result.body as { token: string; refresh_token: string; expires_in: number; device_token: string };
  assert.deepEqual(Object.keys(tokens), ["token", "refresh_token", "expires_in", "device_token"]);
  // The session is the account's, and records the passkey as its sign-in method.
  const me = await api("GET", "/auth/me", undefined, tokens.token);
  assert.equal((me.body as { email: string }).email, email);
  const sessions = (await api("GET", "/auth/sessions", undefined, tokens.token)).body as {
    amr: string[];
    current: boolean;
  }[];
  assert.deepEqual(sessions.find((session) => session.current)?.amr, ["hwk", "mfa"]);
});

/** The ```js blocks of docs/passkeys.md's section "Try it from /docs", in order. */
function recipeBlocks(): string[] {
  const markdown = readFileSync(join(root, "docs/passkeys.md"), "utf8");
  const start = markdown.indexOf("### Try it from /docs");
  assert.ok(start >= 0, 'docs/passkeys.md has no section "Try it from /docs"');
  const body = markdown.indexOf("\n", start) + 1;
  const next = markdown.slice(body).search(/^#{1,3} /m);
  const section = markdown.slice(body, next < 0 ? undefined : body + next);
  return [...section.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

/** Runs a recipe block in the page as the console would (top-level await), and answers what it logs. */
async function pasted(block: string): Promise<string> {
  const logged = page.waitForEvent("console", { predicate: (message) => message.type() === "log" });
  await page.evaluate(`(async () => {\n${block}\n})()`);
  return (await logged).text();
}

test("docs/passkeys.md's recipe, pasted into /docs after its login form, adds a passkey and signs in with it", async () => {
  assert.ok(accessToken, "needs the account of the first test");
  const [register, signIn, ...more] = recipeBlocks();
  assert.ok(register && signIn && more.length === 0, "the recipe has two ```js blocks: add a passkey, sign in");
  // The authenticator forgets the earlier tests' passkey: the recipe's is the only one it holds.
  await cdp.send("WebAuthn.clearCredentials", { authenticatorId });

  // Step 2: the page's own POST /auth/login form, which fills the page's "Login token" field.
  const login = page
    .locator("details.op")
    .filter({ has: page.locator(":scope > summary > .method", { hasText: /^POST$/ }) })
    .filter({ has: page.locator(":scope > summary > .path", { hasText: /^\/auth\/login$/ }) });
  await page.locator("#bearer").fill("");
  await login.locator("summary").click();
  await login.locator("textarea[name=body]").fill(JSON.stringify({ email, password: PASSWORD }));
  await login.getByRole("button", { name: "Send request" }).click();
  await login.locator("pre.result[data-status]").waitFor();
  assert.equal(await login.locator("pre.result").getAttribute("data-status"), "200");
  assert.notEqual(await page.locator("#bearer").inputValue(), "");

  // Step 3, "with your password".
  const withPassword = register.replace(/password: "[^"]*"/, `password: ${JSON.stringify(PASSWORD)}`);
  assert.notEqual(withPassword, register, "the recipe's registration block sends no password");
  const added = await pasted(withPassword);
  assert.match(added, /^201 \{"id":"[^"]+","name":"This browser",/);
  const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
  assert.equal(credentials.length, 1);

  // Step 4.
  const signedIn = await pasted(signIn);
  assert.match(signedIn, /^200 /);
  const tokens = JSON.parse(signedIn.slice(4)) as { token: string };
  const me = await api("GET", "/auth/me", undefined, tokens.token);
  assert.equal((me.body as { email: string }).email, email);
});
