/**
 * `npm run test:e2e`: sharing as a new user meets it, against a real `wrangler dev`, with two accounts and curl,
 * and the public link opened in a real browser.
 *
 * - Starts the worker (wrangler-dev.ts: a free loopback port, its own temporary D1, no local settings) with
 *   NOTES_AUTH=required and a JWT secret of this run; makes two verified accounts (the codes read from the
 *   worker's D1): an owner with a note, and the address the README shares with.
 * - Runs the ```sh block of the README's "Sharing" section as written, with bash and curl, the owner's `$H` and
 *   note `$ID` (walk-throughs.ts, as the walk-throughs run): every line exits with 0, the first answers a public
 *   link, the second a share to the README's address, which the grantee then reads.
 * - Opens the link's URL in headless Chromium (`$CHROMIUM_PATH`, default /usr/bin/chromium) with no token: the
 *   page shows the note's JSON, and the answer says `Cache-Control: no-store`, `X-Robots-Tag: noindex`,
 *   `Referrer-Policy: no-referrer`. After the owner revokes the link, the same URL answers 404 in the browser,
 *   the answer of a token never made, on a new visit and on a reload alike.
 * - Leaves a screenshot of the shared note in test/e2e/.artifacts/shared.png.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { BrowserContext, Page } from "playwright-core";
import { failuresOf, runInBash, stepsOf, walkThroughBlocks, type Ran } from "./walk-throughs.ts";
import { root, START_WORKER_TIMEOUT_MS, startWorker, type Worker, openChromium } from "./wrangler-dev.ts";

const PASSWORD = "correct horse battery";
/** The README's Sharing section: its curl lines, a link and then a share. */
const README_STEPS = walkThroughBlocks(readFileSync(join(root, "README.md"), "utf8"), /^Sharing$/).flatMap((block) =>
  stepsOf("README.md", block),
);
/** The address the README's share goes to (read from its line): an account of it reads the note. */
const GRANTEE = /"email":"([^"]+)"/.exec(README_STEPS[1]?.command ?? "")?.[1] ?? "";
const screenshotPath = join(root, "test/e2e/.artifacts/shared.png");

interface Note {
  id: number;
  title: string;
  content: string;
  created_at: string;
}
interface NewLink {
  id: string;
  token: string;
  url: string;
  created_at: string;
}
interface Share {
  id: string;
  email: string;
  role: string;
  created_at: string;
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let worker: Worker | undefined;
let context: BrowserContext | undefined;
let page: Page;
let ownerToken = "";
let granteeToken = "";
let note: Note | undefined;
let link: NewLink | undefined;

/** A request to the API from Node, with `token` if given: its status and body (JSON when it is). */
async function api(method: string, path: string, token?: string, body?: unknown) {
  const response = await fetch(`${worker!.origin}${path}`, {
    method,
    headers: { "Content-Type": "application/json", ...(token && { Authorization: `Bearer ${token}` }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const json = response.headers.get("content-type")?.startsWith("application/json");
  return { status: response.status, body: json ? (JSON.parse(text) as unknown) : text };
}

/** A verified account of `email`, signed in: its access token. */
async function signedIn(email: string): Promise<string> {
  assert.equal((await api("POST", "/auth/register", undefined, { email, password: PASSWORD })).status, 201);
  const [row] = worker!.query(
    `SELECT code FROM one_time_codes WHERE user_id = (SELECT id FROM users WHERE email = '${email}')`,
  );
  assert.ok(row, `no verification code stored for ${email}`);
  assert.equal((await api("POST", "/auth/verify-email", undefined, { email, token: row.code })).status, 200);
  const login = await api("POST", "/auth/login", undefined, { email, password: PASSWORD });
  assert.equal(login.status, 200);
  return (login.body as { token: string }).token;
}

/** What the page shows as its text: Chromium shows a JSON answer opened on its own as plain text. */
const shownText = () => page.locator("body").innerText();

before(
  async () => {
    worker = await startWorker({
      NOTES_AUTH: "required",
      JWT_SECRET_KEY: randomBytes(32).toString("base64url"),
      BCRYPT_COST: "4",
    });
    ({ context, page } = await openChromium(worker, { viewport: { width: 600, height: 200 } }));
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

test("two accounts: an owner with a note, and the address the README shares with", async () => {
  assert.equal(README_STEPS.length, 2, "the README's Sharing section: a link, then a share");
  assert.match(GRANTEE, /^[^@\s]+@[^@\s]+$/, "the README's share names an address");
  ownerToken = await signedIn(`owner-${randomBytes(6).toString("hex")}@example.com`);
  granteeToken = await signedIn(GRANTEE);
  const created = await api("POST", "/notes", ownerToken, { title: "Recipe", content: "Flour, water, salt" });
  assert.equal(created.status, 201);
  note = created.body as Note;
});

test("the README's Sharing lines run with curl as written: a public link, and a share the grantee reads", async () => {
  assert.ok(note, "needs the note of the first test");
  const env = {
    API: worker!.origin,
    J: "Content-Type: application/json",
    H: `Authorization: Bearer ${ownerToken}`,
    ID: String(note.id),
  };
  const dir = mkdtempSync(join(worker!.tmp, "readme-sharing-"));
  const results: Ran[] = await runInBash(dir, README_STEPS, env, 60_000);
  assert.deepEqual(failuresOf(README_STEPS, results), []);

  link = JSON.parse(results[0]!.output) as NewLink;
  assert.deepEqual(Object.keys(link), ["id", "token", "url", "created_at"]);
  assert.match(link.token, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(link.url, `${worker!.origin}/shared/${link.token}`);
  assert.match(link.created_at, ISO);
  const share = JSON.parse(results[1]!.output) as Share;
  assert.deepEqual({ ...share, id: "", created_at: "" }, { id: "", email: GRANTEE, role: "editor", created_at: "" });
  assert.match(share.created_at, ISO);

  assert.deepEqual(await api("GET", "/notes?shared=true", granteeToken), { status: 200, body: [note] });
  assert.deepEqual(await api("GET", `/notes/${note.id}/shares`, granteeToken), { status: 200, body: [share] });
});

test("Chromium opens the public link with no token: the note's JSON, no-store, noindex, no-referrer", async () => {
  assert.ok(link && note, "needs the link of the previous test");
  const response = await page.goto(link.url);
  assert.equal(response?.status(), 200);
  const headers = response!.headers();
  assert.equal(headers["content-type"], "application/json");
  assert.equal(headers["cache-control"], "no-store");
  assert.equal(headers["x-robots-tag"], "noindex");
  assert.equal(headers["referrer-policy"], "no-referrer");
  assert.deepEqual(JSON.parse(await shownText()), {
    title: note.title,
    content: note.content,
    created_at: note.created_at,
    updated_at: note.created_at,
  });
  mkdirSync(join(screenshotPath, ".."), { recursive: true });
  await page.screenshot({ path: screenshotPath });
});

test("once the owner revokes the link, the same URL answers 404 in Chromium, as a token never made does", async () => {
  assert.ok(link, "needs the link of an earlier test");
  assert.equal((await api("DELETE", `/notes/${note!.id}/links/${link.id}`, ownerToken)).status, 204);
  const never = await api("GET", `/shared/${randomBytes(32).toString("base64url")}`);
  assert.equal(never.status, 404);
  for (const visit of [() => page.goto(link!.url), () => page.reload()]) {
    const response = await visit();
    assert.equal(response?.status(), 404);
    assert.equal(response!.headers()["cache-control"], "no-store");
    assert.deepEqual(JSON.parse(await shownText()), never.body);
  }
});
