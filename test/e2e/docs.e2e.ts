/**
 * `npm run test:e2e`: GET /docs in a real browser against a real `wrangler dev`.
 *
 * - Starts the worker with `wrangler dev` on a free loopback port (wrangler-dev.ts), with its own temporary
 *   D1 and none of the developer's local settings (`.dev.vars`, `.env` and this shell's variables are not
 *   read): the worker sees wrangler.toml's [vars] and the `--var`s below only; mail is unconfigured.
 * - Drives Debian's Chromium (`$CHROMIUM_PATH`, default /usr/bin/chromium) with playwright-core, which
 *   never downloads a browser.
 * - Validates /openapi.json against the official OpenAPI 3.1 schema.
 * - Checks that every operation of /openapi.json is on the page exactly once (and the X-D1-Bookmark header,
 *   which most of them take, explained once above them), creates a note with the page's own form (POST /notes,
 *   prefilled example body) and reads it back through the API and through the page, and that the page talked
 *   to no origin but the worker's and logged no error.
 * - Leaves a full-page screenshot in test/e2e/.artifacts/docs.png.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Validator } from "@seriousme/openapi-schema-validator";
import type { BrowserContext, Locator, Page } from "playwright-core";
import { root, START_WORKER_TIMEOUT_MS, startWorker, type Worker, openChromium } from "./wrangler-dev.ts";

const screenshotPath = join(root, "test/e2e/.artifacts/docs.png");

type Note = { id: number; title: string; content: string; created_at: string };
type OpenApi = { paths: Record<string, Record<string, unknown>> };
const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

let worker: Worker | undefined;
let context: BrowserContext | undefined;
let page: Page;
let origin = "";
const pageRequests: string[] = [];
const consoleErrors: string[] = [];
// Console lines a test caused on purpose (Chromium logs every 4xx answer as an error).
const provokedErrors: string[] = [];

/** The operation on the page whose summary shows exactly this method and path. */
function operation(method: string, path: string): Locator {
  const exact = (text: string) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
  return page
    .locator("details.op")
    .filter({ has: page.locator(":scope > summary > .method", { hasText: exact(method) }) })
    .filter({ has: page.locator(":scope > summary > .path", { hasText: exact(path) }) });
}

/** Clicks "Send request" in an open operation and returns the status and the parsed JSON it shows. */
async function send(op: Locator): Promise<{ status: number; body: unknown; text: string }> {
  const result = op.locator("pre.result");
  await op.getByRole("button", { name: "Send request" }).click();
  await result.and(page.locator("[data-status]")).waitFor();
  const text = await result.innerText();
  const status = Number(await result.getAttribute("data-status"));
  // "METHOD url\nSTATUS text\nheaders…\n\nbody"
  const body = text.slice(text.indexOf("\n\n") + 2);
  return { status, body: JSON.parse(body), text };
}

let screenshotTaken = false;

async function takeScreenshot(): Promise<void> {
  mkdirSync(join(screenshotPath, ".."), { recursive: true });
  await page.screenshot({ path: screenshotPath, fullPage: true });
  screenshotTaken = true;
}

before(
  async () => {
    worker = await startWorker({ NOTES_AUTH: "off" });
    origin = `http://127.0.0.1:${worker.port}`;
    ({ context, page } = await openChromium(worker, { viewport: { width: 1100, height: 900 } }));
    // Every request of every page and worker in the browser context, not only the main frame's.
    context.on("request", (request) => pageRequests.push(request.url()));
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(`${message.text()} (${message.location().url})`);
    });
    page.on("pageerror", (error) => consoleErrors.push(`uncaught: ${error.message}`));
    await page.goto(`${origin}/docs`);
    // The page sets data-ready once it has built every operation from /openapi.json.
    await page.locator('body[data-ready="true"]').waitFor({ state: "attached" });
  },
  { timeout: START_WORKER_TIMEOUT_MS },
);

after(async () => {
  try {
    // After a failure, the page as it was then, to see what went wrong.
    if (context && !screenshotTaken) await takeScreenshot().catch(() => {});
    await context?.close();
  } finally {
    await worker?.stop();
  }
});

test("the worker runs without the developer's .dev.vars, .env or shell variables", () => {
  // wrangler names every file it takes secrets from, and lists the bindings (secrets only by name).
  const output = worker!.output();
  assert.doesNotMatch(output, /Using secrets defined in/);
  assert.doesNotMatch(output, /env\.(MAIL_EMAIL|MAIL_APP_PASSWORD|JWT_SECRET_KEY)\b/);
});

// The Workers runtime that runs the other tests forbids generating code, which every full JSON Schema
// 2020-12 validator does; so the document is validated here, in Node, against the official schema.
test("/openapi.json is valid OpenAPI 3.1 under the official schema", async () => {
  const document: unknown = await (await fetch(`${origin}/openapi.json`)).json();
  assert.ok(
    typeof document === "object" && document !== null && !Array.isArray(document),
    "the document is not a JSON object",
  );
  const validator = new Validator();
  const result = await validator.validate({ ...document });
  assert.deepEqual(result.errors ?? [], []);
  assert.equal(result.valid, true);
  assert.equal(validator.version, "3.1");
});

test("every operation of /openapi.json is on /docs exactly once", async () => {
  const spec = (await (await fetch(`${origin}/openapi.json`)).json()) as OpenApi;
  const documented = Object.entries(spec.paths)
    .flatMap(([path, item]) =>
      Object.keys(item)
        .filter((key) => HTTP_METHODS.includes(key))
        .map((method) => `${method.toUpperCase()} ${path}`),
    )
    .sort();
  assert.ok(documented.length >= 9, `only ${documented.length} operations in /openapi.json`);
  const shown: string[] = [];
  for (const summary of await page.locator("details.op > summary").all()) {
    shown.push(`${await summary.locator(".method").innerText()} ${await summary.locator(".path").innerText()}`);
  }
  shown.sort();
  assert.deepEqual(shown, documented);
});

test('no field or heading on the page reads "undefined"', async () => {
  // Text of closed operations too: a parameter the page failed to resolve shows as "undefined (undefined)".
  const texts = [
    ...(await page.locator("label").allTextContents()),
    ...(await page.locator("details.op > summary").allTextContents()),
  ];
  assert.ok(texts.length > 0);
  assert.deepEqual(
    texts.filter((text) => text.includes("undefined")),
    [],
  );
});

let created: Note;

test("POST /notes from the page creates a note", async () => {
  const op = operation("POST", "/notes");
  await op.locator("summary").click();
  assert.notEqual(await op.getAttribute("open"), null, "POST /notes did not open");
  const example = JSON.parse(await op.locator("textarea[name=body]").inputValue()) as {
    title: string;
    content: string;
  };
  assert.deepEqual(example, { title: "First", content: "Hello" });

  const { status, body, text } = await send(op);
  assert.equal(status, 201, text);
  created = body as Note;
  assert.equal(typeof created.id, "number");
  assert.equal(created.title, example.title);
  assert.equal(created.content, example.content);

  // The note is really stored: read it back through the API from here.
  const response = await fetch(`${origin}/notes/${created.id}`);
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), created);
});

test("GET /notes/{id} from the page reads it back", async () => {
  assert.ok(created, "needs the note created by the previous test");
  const op = operation("GET", "/notes/{id}");
  await op.locator("summary").click();
  await op.locator("input[name=id]").fill(String(created.id));
  const { status, body, text } = await send(op);
  assert.equal(status, 200, text);
  assert.deepEqual(body, created);
});

test("the page sends the X-D1-Bookmark field as a header, not in the query", async () => {
  assert.ok(created, "needs the note created by an earlier test");
  const op = operation("GET", "/notes/{id}");
  const bookmark = op.locator('input[name="X-D1-Bookmark"]');
  assert.equal(
    await op
      .locator("label")
      .filter({ hasText: /^X-D1-Bookmark \(header\)/ })
      .count(),
    1,
  );

  // Its explanation, shared by every operation that uses the database, is on the page once; the field links to it.
  assert.equal(await page.locator("p, label").filter({ hasText: "least that recent" }).count(), 1);
  assert.equal(await page.locator("#param-Bookmark").filter({ hasText: "least that recent" }).count(), 1);
  assert.equal(await op.locator('label a[href="#param-Bookmark"]').count(), 1);

  // A value that is not a bookmark: the worker's 400 proves the header reached it.
  await bookmark.fill("not a bookmark");
  const sent = page.waitForRequest((request) => request.url().startsWith(`${origin}/notes/`));
  const refused = await send(op);
  const request = await sent;
  assert.equal(new URL(request.url()).search, "", "the bookmark went into the query string");
  assert.equal(request.headers()["x-d1-bookmark"], "not a bookmark");
  assert.equal(refused.status, 400, refused.text);
  assert.deepEqual(refused.body, { error: "Invalid X-D1-Bookmark header" });
  provokedErrors.push(
    `Failed to load resource: the server responded with a status of 400 (Bad Request) (${request.url()})`,
  );

  // The bookmark of a real answer: read-your-writes, and the page shows the answer's bookmark.
  const fresh = (await fetch(`${origin}/notes/${created.id}`)).headers.get("x-d1-bookmark");
  assert.ok(fresh, "the API answered without X-D1-Bookmark");
  await bookmark.fill(fresh);
  const answered = await send(op);
  assert.equal(answered.status, 200, answered.text);
  assert.deepEqual(answered.body, created);
  assert.match(answered.text, /^x-d1-bookmark: \S+$/m);
  await bookmark.fill("");
});

test("saves a full-page screenshot", async () => {
  // With POST /notes open and its answer shown (and GET /notes/{id}'s).
  const result = operation("POST", "/notes").locator("pre.result");
  assert.ok(await result.isVisible());
  await takeScreenshot();
});

test("the page requested nothing from any other origin", () => {
  assert.ok(pageRequests.length > 0);
  const elsewhere = pageRequests.filter((url) => new URL(url).origin !== origin);
  assert.deepEqual(elsewhere, []);
});

test("the page logged no error", () => {
  // Chromium asks for /favicon.ico by itself; the worker has none and answers 404, which Chromium logs.
  // That request is the browser's, not the page's.
  const favicon = `Failed to load resource: the server responded with a status of 404 (Not Found) (${origin}/favicon.ico)`;
  assert.deepEqual(
    consoleErrors.filter((line) => line !== favicon && !provokedErrors.includes(line)),
    [],
  );
});
