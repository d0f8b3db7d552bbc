/**
 * Webhook deliveries (src/audit/webhooks/): through the local Queue to the loopback receiver of
 * test/webhooks/servers.ts, signed as Standard Webhooks and verified with its own library, retried with the same
 * webhook-id, kept as failed after their window, sent again on request, and handed over by the cron when the queue
 * could not take them. WEBHOOK_RETRY_BASE_SECONDS is 1 in the suite.
 */
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../../src/index";
import { AdminMessage } from "../../../src/lib/admin";
import { account, bearer, logIn } from "../../support/accounts";
import { admin, userIdOf } from "../../support/admin";
import { eventsOf, eventually, outboxRow } from "../../support/audit";
import { callWithEnv, captureLogs, fireCron, PASSWORD, type Overrides } from "../../support/app";
import { ALL_EVENTS, deliveries, received, scriptReceiver } from "../../support/webhooks";
import type { Delivery } from "../../webhooks/types";

afterEach(() => {
  vi.restoreAllMocks();
});

/** A queue that takes nothing: the binding of a deployment whose queue is down. */
const refusingQueue: Queue = {
  metrics: () => Promise.reject(new Error("queue unavailable")),
  send: () => Promise.reject(new Error("queue unavailable")),
  sendBatch: () => Promise.reject(new Error("queue unavailable")),
};

/** A verified account, with its id, and the event a login of it records under every-event settings. */
async function signedInEvent(overrides: Overrides = ALL_EVENTS) {
  const email = await account();
  const userId = await userIdOf(email);
  return { email, userId, login: () => callWithEnv(overrides, "POST", "/auth/login", { email, password: PASSWORD }) };
}

/** What a receiver verifies: the signature over id, timestamp and body (throws when it is not valid). */
function verified(delivery: Delivery): unknown {
  return new Webhook(env.WEBHOOKS.secret).verify(delivery.body, {
    "webhook-id": delivery.id,
    "webhook-timestamp": delivery.timestamp,
    "webhook-signature": delivery.signature,
  });
}

describe("delivery", () => {
  it("POSTs a subscribed event once its write has committed, signed, as {type, timestamp, data}", async () => {
    const { userId, login } = await signedInEvent();
    expect((await login()).status).toBe(200);
    const [event] = await eventsOf(userId, "user.signed_in");
    const [delivery] = await deliveries({ id: event!.id }, 1);
    expect(delivery).toMatchObject({ id: event!.id, contentType: "application/json", answered: 204 });
    const at = new Date(event!.at).toISOString();
    expect(verified(delivery!)).toEqual({
      type: "user.signed_in",
      timestamp: at,
      data: {
        id: event!.id,
        type: "user.signed_in",
        user_id: userId,
        actor: "user",
        at,
        ip: null,
        user_agent: null,
        data: { amr: ["pwd"], session_id: expect.any(String) },
      },
    });
    expect(delivery!.signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(Math.abs(Number(delivery!.timestamp) - Date.now() / 1000)).toBeLessThan(30);
    expect(await eventually(async () => ((await outboxRow(event!.id)) === null ? true : undefined))).toBe(true);
  });

  it("sends again after a failure, with the same webhook-id and a fresh timestamp and signature: 500, 500, then 2xx", async () => {
    const { userId, login } = await signedInEvent();
    await scriptReceiver(userId, [500, 500, 204]);
    expect((await login()).status).toBe(200);
    const [event] = await eventsOf(userId, "user.signed_in");
    const got = await deliveries({ id: event!.id }, 3, 20_000);
    expect(got.map((delivery) => [delivery.id, delivery.answered])).toEqual([
      [event!.id, 500],
      [event!.id, 500],
      [event!.id, 204],
    ]);
    // Every attempt is signed anew, each signature valid for its own timestamp; the body stays the event.
    for (const delivery of got) expect(verified(delivery)).toMatchObject({ type: "user.signed_in" });
    expect(new Set(got.map((delivery) => delivery.body)).size).toBe(1);
    expect(new Set(got.map((delivery) => delivery.signature)).size).toBe(3);
    const timestamps = got.map((delivery) => Number(delivery.timestamp));
    expect(timestamps[1]! - timestamps[0]!).toBeGreaterThanOrEqual(1);
    expect(timestamps[2]! - timestamps[1]!).toBeGreaterThanOrEqual(2);
    // Backoff doubles from WEBHOOK_RETRY_BASE_SECONDS: at least 1 s, then at least 2 s.
    expect(got[1]!.receivedAt - got[0]!.receivedAt).toBeGreaterThanOrEqual(900);
    expect(got[2]!.receivedAt - got[1]!.receivedAt).toBeGreaterThanOrEqual(1_900);
    expect(await eventually(async () => ((await outboxRow(event!.id)) === null ? true : undefined))).toBe(true);
  }, 30_000);

  it("gives up on a receiver that does not answer within 10 s and sends again; the request that caused it did not wait", async () => {
    const { userId, login } = await signedInEvent();
    await scriptReceiver(userId, ["hang", 204]);
    const started = Date.now();
    expect((await login()).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(3_000);
    const [event] = await eventsOf(userId, "user.signed_in");
    const got = await deliveries({ id: event!.id }, 2, 25_000);
    expect(got.map((delivery) => delivery.answered)).toEqual(["hang", 204]);
    expect(got[1]!.receivedAt - got[0]!.receivedAt).toBeGreaterThanOrEqual(10_000);
  }, 40_000);

  it("puts only subscribed types in the outbox, and nothing without WEBHOOK_URL", async () => {
    const { userId, login } = await signedInEvent({ WEBHOOK_EVENTS: "user.banned,user.unbanned" });
    expect((await login()).status).toBe(200);
    const [event] = await eventsOf(userId, "user.signed_in");
    expect(await outboxRow(event!.id)).toBeNull();
    const off = await signedInEvent({ ...ALL_EVENTS, WEBHOOK_URL: "" });
    expect((await off.login()).status).toBe(200);
    const [unsent] = await eventsOf(off.userId, "user.signed_in");
    expect(await outboxRow(unsent!.id)).toBeNull();
  });

  it("never sends an event whose change did not commit", async () => {
    const email = await account();
    const userId = await userIdOf(email);
    const tokens = await logIn(email);
    await env.DB.prepare(
      "CREATE TRIGGER refuse_password BEFORE UPDATE OF password ON users BEGIN SELECT RAISE(ABORT, 'refused'); END",
    ).run();
    try {
      const change = await callWithEnv(
        ALL_EVENTS,
        "POST",
        "/auth/change-password",
        { current_password: PASSWORD, new_password: "another long password" },
        bearer(tokens.token),
      );
      expect(change.status).toBe(500);
    } finally {
      await env.DB.prepare("DROP TRIGGER refuse_password").run();
    }
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await received({ userId })).toEqual([]);
    expect(await eventsOf(userId, "user.password_changed")).toEqual([]);
  });
});

describe("failed deliveries", () => {
  it("keeps a delivery as failed after its window, lists it, and sends it again on request with the same id", async () => {
    const { userId, login } = await signedInEvent();
    await scriptReceiver(userId, [500, 503, 204]);
    expect((await login()).status).toBe(200);
    const [event] = await eventsOf(userId, "user.signed_in");
    await deliveries({ id: event!.id }, 1);
    // As if the first attempt had been 24 hours ago: the next failure is the last.
    await env.DB.prepare("UPDATE webhook_outbox SET window_start = ? WHERE event_id = ?")
      .bind(Date.now() - 86_400_000, event!.id)
      .run();
    await deliveries({ id: event!.id }, 2);
    const failed = await eventually(async () => {
      const row = await outboxRow(event!.id);
      return row?.state === "failed" ? row : undefined;
    });
    expect(failed).toMatchObject({ attempts: 2, last_status: 503, last_error: "answered 503" });

    const list = await admin("GET", "/admin/webhooks/failed?limit=100");
    expect(list.headers.get("cache-control")).toBe("no-store");
    const { webhooks } = (await list.json()) as { webhooks: Array<Record<string, unknown>> };
    expect(webhooks.find((webhook) => webhook.id === event!.id)).toEqual({
      id: event!.id,
      type: "user.signed_in",
      user_id: userId,
      event_at: new Date(event!.at).toISOString(),
      attempts: 2,
      last_attempt_at: expect.any(String),
      last_status: 503,
      last_error: "answered 503",
      failed_at: expect.any(String),
    });

    const retried = await admin("POST", `/admin/webhooks/failed/${event!.id}/retry`);
    expect({ status: retried.status, body: await retried.json() }).toEqual({
      status: 202,
      body: { id: event!.id, state: "pending" },
    });
    const got = await deliveries({ id: event!.id }, 3);
    expect(got.map((delivery) => [delivery.id, delivery.answered])).toEqual([
      [event!.id, 500],
      [event!.id, 503],
      [event!.id, 204],
    ]);
    expect(verified(got[2]!)).toMatchObject({ data: { id: event!.id } });
    expect(await eventually(async () => ((await outboxRow(event!.id)) === null ? true : undefined))).toBe(true);
    // Nothing left to retry.
    const again = await admin("POST", `/admin/webhooks/failed/${event!.id}/retry`);
    expect({ status: again.status, body: await again.json() }).toEqual({
      status: 404,
      body: { error: AdminMessage.webhookNotFound },
    });
  }, 30_000);
});

describe("what the queue could not take", () => {
  it("is handed to the queue by the cron, and delivered", async () => {
    const logs = captureLogs();
    const { userId, login } = await signedInEvent({ ...ALL_EVENTS, WEBHOOK_QUEUE: refusingQueue });
    expect((await login()).status).toBe(200);
    expect(logs.find((line) => line.event === "webhook_enqueue_failed")).toMatchObject({ events: 1 });
    const [event] = await eventsOf(userId, "user.signed_in");
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await received({ id: event!.id })).toEqual([]);
    expect(await outboxRow(event!.id)).toMatchObject({ state: "pending", attempts: 0 });
    await fireCron();
    expect((await deliveries({ id: event!.id }, 1)).map((delivery) => delivery.answered)).toEqual([204]);
  });

  it("is delivered by the cron itself when the queue refuses it too", async () => {
    const { userId, login } = await signedInEvent({ ...ALL_EVENTS, WEBHOOK_QUEUE: refusingQueue });
    expect((await login()).status).toBe(200);
    const [event] = await eventsOf(userId, "user.signed_in");
    // The cron with the refusing queue: the worker's scheduled handler with that binding changed.
    const controller: ScheduledController = { scheduledTime: Date.now(), cron: "17 * * * *", noRetry() {} };
    await worker.scheduled(controller, { ...env, WEBHOOK_QUEUE: refusingQueue });
    expect((await received({ id: event!.id })).map((delivery) => delivery.answered)).toEqual([204]);
    expect(await outboxRow(event!.id)).toBeNull();
  });
});
