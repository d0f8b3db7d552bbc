/**
 * `npm run test:e2e`: operating it as docs/operations.md's "Trying it" does, against a real `wrangler dev` with
 * its local queue, and the receiver `npm run webhook:receiver` (scripts/webhook-receiver.ts) as its own process.
 *
 * - Starts the receiver on a free loopback port with a fresh `whsec_` secret, and the worker with ADMIN_TOKEN,
 *   WEBHOOK_URL (the receiver), WEBHOOK_SECRET and WEBHOOK_RETRY_BASE_SECONDS=2.
 * - Registers an account: the receiver prints `verified <id> user.registered`, checked by the library.
 * - Verifies and bans it through the admin API: its login answers 403 `This account is suspended.`; unbanned,
 *   it logs in; the audit log lists unban, the refused sign-in and the ban, newest first.
 * - Stops the receiver, signs the account out as an admin, starts the receiver again: the event arrives with a
 *   retry, once verified, under one webhook-id.
 */
import { randomBytes } from "node:crypto";
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { freePort, root, startWorker, type Worker } from "./wrangler-dev.ts";

const PASSWORD = "correct horse battery";
const email = `operations-${randomBytes(6).toString("hex")}@example.com`;
const adminToken = randomBytes(24).toString("hex");
const secret = `whsec_${randomBytes(32).toString("base64")}`;
/** How long a delivery may take to be printed: the queue's batch timeout, then a retry or two of 2 s and 4 s. */
const DELIVERY_WAIT_MS = 40_000;

let worker: Worker | undefined;
let receiverPort = 0;
let receiver: ChildProcess | undefined;
/** Every line the receivers printed, across restarts. */
const printed: string[] = [];
let userId = 0;

/** Starts `npm run webhook:receiver` on receiverPort, resolved once it listens. */
async function startReceiver(): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(root, "scripts/webhook-receiver.ts")], {
    env: { ...process.env, WEBHOOK_SECRET: secret, WEBHOOK_PORT: String(receiverPort) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let buffered = "";
  await new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`the receiver exited (${code})`)));
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      printed.push(...lines);
      if (lines.some((line) => line.startsWith("webhook receiver on"))) resolve();
    });
  });
  return child;
}

async function stopReceiver(): Promise<void> {
  const child = receiver;
  receiver = undefined;
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/** Resolves once `done()` holds, or DELIVERY_WAIT_MS has passed. */
async function until(done: () => boolean): Promise<void> {
  const deadline = Date.now() + DELIVERY_WAIT_MS;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
}

/** The receiver's lines for deliveries of `type`, once there is one (or DELIVERY_WAIT_MS has passed). */
async function deliveriesOf(type: string): Promise<string[]> {
  const matching = () => printed.filter((line) => line.split(" ")[2] === type);
  await until(() => matching().length > 0);
  return matching();
}

/** A request to the API from Node: status and body (JSON when it is). */
async function api(
  method: string,
  path: string,
  { body, bearer }: { body?: unknown; bearer?: string } = {},
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${worker!.origin}${path}`, {
    method,
    headers: { "Content-Type": "application/json", ...(bearer && { Authorization: `Bearer ${bearer}` }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const json = response.headers.get("content-type")?.startsWith("application/json");
  return { status: response.status, body: json ? (JSON.parse(text) as unknown) : text };
}

const admin = (method: string, path: string, body?: unknown) => api(method, path, { body, bearer: adminToken });

before(
  async () => {
    receiverPort = await freePort();
    receiver = await startReceiver();
    worker = await startWorker({
      JWT_SECRET_KEY: randomBytes(32).toString("base64url"),
      BCRYPT_COST: "4",
      ADMIN_TOKEN: adminToken,
      WEBHOOK_URL: `http://127.0.0.1:${receiverPort}/hook`,
      WEBHOOK_SECRET: secret,
      WEBHOOK_RETRY_BASE_SECONDS: "2",
    });
  },
  { timeout: 90_000 },
);

after(async () => {
  try {
    await stopReceiver();
  } finally {
    await worker?.stop();
  }
});

test("a registration reaches the receiver, its signature verified by the Standard Webhooks library", async () => {
  assert.equal((await api("POST", "/auth/register", { body: { email, password: PASSWORD } })).status, 201);
  const lines = await deliveriesOf("user.registered");
  const [line] = lines;
  assert.ok(line !== undefined && lines.length === 1, printed.join("\n"));
  assert.match(line, /^verified \S+ user\.registered \{"type":"user\.registered","timestamp":"[^"]+","data":/);
  assert.ok(!printed.some((line) => line.startsWith("REJECTED")), printed.join("\n"));
});

test("an admin bans the account: its login is refused as suspended until the unban; the audit shows it", async () => {
  const [row] = worker!.query(
    `SELECT code FROM one_time_codes WHERE user_id = (SELECT id FROM users WHERE email = '${email}')`,
  );
  assert.ok(row, "no verification code stored");
  assert.equal((await api("POST", "/auth/verify-email", { body: { email, token: row.code } })).status, 200);

  const found = await admin("GET", `/admin/users?email=${encodeURIComponent(email)}`);
  assert.equal(found.status, 200);
  const users = (found.body as { users: { id: number; email: string; banned_until: string | null }[] }).users;
  assert.deepEqual(
    users.map((user) => [user.email, user.banned_until]),
    [[email, null]],
  );
  const [user] = users;
  assert.ok(user);
  userId = user.id;

  assert.equal(
    (await admin("POST", `/admin/users/${userId}/ban`, { until: null, reason: "Trying the ban" })).status,
    200,
  );
  const refused = await api("POST", "/auth/login", { body: { email, password: PASSWORD } });
  assert.deepEqual(refused, { status: 403, body: "This account is suspended." });
  assert.equal((await admin("POST", `/admin/users/${userId}/unban`)).status, 200);
  assert.equal((await api("POST", "/auth/login", { body: { email, password: PASSWORD } })).status, 200);

  const audit = await admin("GET", `/admin/audit?user_id=${userId}&limit=5`);
  assert.equal(audit.status, 200);
  const types = (audit.body as { events: { type: string }[] }).events.map((event) => event.type);
  assert.deepEqual(types.slice(1, 4), ["user.unbanned", "user.sign_in_failed", "user.banned"]);
  assert.equal(types[0], "user.signed_in");
});

test("a delivery the stopped receiver missed comes again once it is back, verified, under one webhook-id", async () => {
  assert.ok(userId, "needs the account of the previous test");
  await stopReceiver();
  assert.equal((await admin("POST", `/admin/users/${userId}/sign-out`)).status, 204);
  await new Promise((r) => setTimeout(r, 3_000)); // the first attempt finds nobody listening
  receiver = await startReceiver();
  const lines = await deliveriesOf("user.signed_out_by_admin");
  const id = lines[0]?.split(" ")[1];
  assert.ok(id, printed.join("\n"));
  assert.equal(new Set(lines.map((line) => line.split(" ")[1])).size, 1);
  assert.ok(
    lines.every((line) => line.startsWith("verified ")),
    printed.join("\n"),
  );
  // The worker's log: the attempt made while the receiver was down failed, a later one delivered it (logged once the
  // receiver's answer is in, so a moment after the receiver printed it).
  const logOf = () =>
    worker!
      .output()
      .split("\n")
      .filter((line) => line.includes(id));
  await until(() => logOf().some((line) => line.includes("webhook_delivered")));
  assert.ok(
    logOf().some((line) => line.includes("webhook_attempt_failed")),
    logOf().join("\n"),
  );
  assert.ok(
    logOf().some((line) => line.includes("webhook_delivered")),
    logOf().join("\n"),
  );
  const [outbox] = worker!.query(
    `SELECT attempts FROM webhook_outbox JOIN audit_events ON audit_events.id = webhook_outbox.event_id
     WHERE audit_events.type = 'user.signed_out_by_admin'`,
  );
  // Delivered: its outbox row is gone (a row still there would be one the receiver has not seen).
  assert.equal(outbox, undefined);
});
