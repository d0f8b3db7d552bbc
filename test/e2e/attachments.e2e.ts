/**
 * `npm run test:e2e`: attachments as a new user meets them, against a real `wrangler dev` and its local R2.
 *
 * - Starts the worker (wrangler-dev.ts: a free loopback port, its own temporary D1 and R2, no local settings)
 *   with NOTES_AUTH=required and a JWT secret of this run; makes a verified account (the code read from the
 *   worker's D1) and a note.
 * - Uploads a photo (a PNG made here) with curl, as the README shows, and an HTML file.
 * - Opens the photo's signed link in headless Chromium (`$CHROMIUM_PATH`, default /usr/bin/chromium) with
 *   no token: the image is shown, at its size; and shows it with `<img src>` from a page of another origin.
 * - Opens the HTML file's signed link: Chromium downloads it rather than rendering it.
 * - Leaves a screenshot of the shown photo in test/e2e/.artifacts/attachment.png.
 */
import { randomBytes } from "node:crypto";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { crc32, deflateSync } from "node:zlib";
import type { BrowserContext, Page } from "playwright-core";
import { root, openChromium, startWorker, type Worker } from "./wrangler-dev.ts";

const PASSWORD = "correct horse battery";
const email = `attachments-${randomBytes(6).toString("hex")}@example.com`;
const screenshotPath = join(root, "test/e2e/.artifacts/attachment.png");
const WIDTH = 64;
const HEIGHT = 48;

interface Attachment {
  id: string;
  content_type: string;
  size: number;
  sha256: string;
  url: string;
}

let worker: Worker | undefined;
let context: BrowserContext | undefined;
let page: Page;
let origin = "";
let token = "";
let noteId = 0;
let photo: Attachment | undefined;

/** A PNG of WIDTH × HEIGHT: the left half red, the right half blue. */
function pngPhoto(): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const framed = Buffer.alloc(body.length + 8);
    framed.writeUInt32BE(data.length, 0);
    body.copy(framed, 4);
    framed.writeUInt32BE(crc32(body), body.length + 4);
    return framed;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(WIDTH, 0);
  header.writeUInt32BE(HEIGHT, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  const rows = Buffer.alloc(HEIGHT * (1 + WIDTH * 3));
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < WIDTH; x++)
      rows.set(x < WIDTH / 2 ? [220, 20, 20] : [20, 20, 220], y * (1 + WIDTH * 3) + 1 + x * 3);
  }
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([
    signature,
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** A request to the API from Node: its status and body (JSON when it is). */
async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${origin}${path}`, {
    method,
    headers: { "Content-Type": "application/json", ...(token && { Authorization: `Bearer ${token}` }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const json = response.headers.get("content-type")?.startsWith("application/json");
  return { status: response.status, body: json ? (JSON.parse(text) as unknown) : text };
}

/** `curl` as the README runs it: uploads `file` to the note; its status and JSON. */
function curlUpload(file: string, filename: string): { status: number; body: Attachment } {
  const result = spawnSync(
    "curl",
    [
      "-s",
      "-w",
      "\n%{http_code}",
      "-X",
      "POST",
      `${origin}/notes/${noteId}/attachments?filename=${encodeURIComponent(filename)}`,
      "-H",
      `Authorization: Bearer ${token}`,
      "--data-binary",
      `@${file}`,
    ],
    { encoding: "utf8", timeout: 30_000 },
  );
  assert.equal(result.status, 0, result.stderr);
  const lines = result.stdout.trimEnd().split("\n");
  return { status: Number(lines.pop()), body: JSON.parse(lines.join("\n")) as Attachment };
}

before(
  async () => {
    worker = await startWorker({
      NOTES_AUTH: "required",
      JWT_SECRET_KEY: randomBytes(32).toString("base64url"),
      BCRYPT_COST: "4",
    });
    origin = worker.origin;
    ({ context, page } = await openChromium(worker, { acceptDownloads: true, viewport: { width: 400, height: 300 } }));
  },
  { timeout: 90_000 },
);

after(async () => {
  try {
    await context?.close();
  } finally {
    await worker?.stop();
  }
});

test("an account with a note is made through the API", async () => {
  assert.equal((await api("POST", "/auth/register", { email, password: PASSWORD })).status, 201);
  const [row] = worker!.query(
    `SELECT code FROM one_time_codes WHERE user_id = (SELECT id FROM users WHERE email = '${email}')`,
  );
  assert.ok(row, "no verification code stored");
  assert.equal((await api("POST", "/auth/verify-email", { email, token: row.code })).status, 200);
  const login = await api("POST", "/auth/login", { email, password: PASSWORD });
  assert.equal(login.status, 200);
  token = (login.body as { token: string }).token;
  const note = await api("POST", "/notes", { title: "Whiteboard", content: "See the photo" });
  assert.equal(note.status, 201);
  noteId = (note.body as { id: number }).id;
});

test("curl uploads a photo: 201, a PNG with its hash and a signed link", () => {
  assert.ok(noteId, "needs the note of the previous test");
  const file = join(worker!.tmp, "whiteboard.png");
  const bytes = pngPhoto();
  writeFileSync(file, bytes);
  const { status, body } = curlUpload(file, "whiteboard.png");
  assert.equal(status, 201, JSON.stringify(body));
  assert.equal(body.content_type, "image/png");
  assert.equal(body.size, bytes.length);
  assert.match(body.url, new RegExp(`^${origin}/attachments/${body.id}\\?expires=\\d+&signature=[0-9a-f]{64}$`));
  photo = body;
});

test("the signed link opened in Chromium, with no token, shows the image", async () => {
  assert.ok(photo, "needs the photo of the previous test");
  const response = await page.goto(photo.url);
  assert.equal(response?.status(), 200);
  const headers = response!.headers();
  assert.equal(headers["content-type"], "image/png");
  assert.match(headers["content-security-policy"] ?? "", /^sandbox;/);
  assert.equal(headers["x-content-type-options"], "nosniff");
  // Chromium shows an image opened on its own as its image document: one <img>, decoded at its size.
  const image = page.locator("img");
  await image.waitFor();
  const size = await image.evaluate((img: { complete: boolean; naturalWidth: number; naturalHeight: number }) => ({
    complete: img.complete,
    width: img.naturalWidth,
    height: img.naturalHeight,
  }));
  assert.deepEqual(size, { complete: true, width: WIDTH, height: HEIGHT });
  mkdirSync(join(screenshotPath, ".."), { recursive: true });
  await page.screenshot({ path: screenshotPath });
});

test("another origin's page shows it with <img src> (the link's answer alone is a cross-origin resource)", async () => {
  assert.ok(photo, "needs the photo of an earlier test");
  // A page of no origin of the API's (about:blank, as an app's page elsewhere would be), with no policy of its own.
  const other = await context!.newPage();
  try {
    await other.setContent("<!doctype html><title>Another app</title>");
    const size = await other.evaluate(async (url: string) => {
      const img = new (globalThis as unknown as { Image: new () => ImageLike }).Image();
      img.src = url;
      await img.decode();
      return { width: img.naturalWidth, height: img.naturalHeight };
    }, photo.url);
    assert.deepEqual(size, { width: WIDTH, height: HEIGHT });
  } finally {
    await other.close();
  }
});

/** What the page's code uses of an <img> (this file is compiled without the DOM's types). */
interface ImageLike {
  src: string;
  naturalWidth: number;
  naturalHeight: number;
  decode(): Promise<void>;
}

test("an HTML file's signed link is a download, never a page", async () => {
  assert.ok(noteId, "needs the note of the first test");
  const file = join(worker!.tmp, "page.html");
  writeFileSync(file, "<!doctype html><title>x</title><script>document.title = 'ran'</script>");
  const { status, body } = curlUpload(file, "page.html");
  assert.equal(status, 201, JSON.stringify(body));
  assert.equal(body.content_type, "application/octet-stream");
  const downloading = page.waitForEvent("download");
  // Navigating to a download aborts the navigation itself.
  await page.goto(body.url).catch(() => undefined);
  const download = await downloading;
  assert.equal(download.suggestedFilename(), "page.html");
});
