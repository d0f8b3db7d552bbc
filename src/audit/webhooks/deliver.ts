import type { Config } from "../../config";
import { base64 } from "../../lib/encoding";
import { describeError, type Logger } from "../../lib/log";
import type { Database } from "../../types";
import type { auditEvents } from "../schema";
import { eventJson } from "../store";
import { MAX_QUEUE_DELAY_SECONDS, WEBHOOK_TIMEOUT_MS } from "../policy";
import { enqueue, isDeliveryMessage, type DeliveryMessage } from "./queue";
import { attemptFailed, claimAttempt, delivered, dueDeliveries, retryAfter } from "./store";

/**
 * Delivering events to WEBHOOK_URL, signed as Standard Webhooks signs them, from the queue's consumer (or the cron,
 * when the queue refuses): an attempt is claimed first (store.ts), then POSTed, then its outcome written; a failed
 * attempt goes back to the queue with the delay before the next. Never inside the request that caused the event.
 */

/** What a delivery needs besides its message: the database, the settings, the queue for the next attempt, a log. */
export interface Courier {
  db: Database;
  webhooks: Config["webhooks"];
  queue: Queue;
  log: Logger;
}

// The HMAC key of each WEBHOOK_SECRET, imported once per isolate.
const keys = new WeakMap<Uint8Array, Promise<CryptoKey>>();

function hmacKey(secret: Uint8Array): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    keys.set(secret, key);
  }
  return key;
}

/** The `webhook-signature` of a message: `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` (Standard Webhooks). */
export async function signature(secret: Uint8Array, id: string, timestamp: number, body: string): Promise<string> {
  const mac = await crypto.subtle.sign(
    "HMAC",
    await hmacKey(secret),
    new TextEncoder().encode(`${id}.${timestamp}.${body}`),
  );
  return `v1,${base64(new Uint8Array(mac))}`;
}

/** The body of an event's webhook: its type, its time, and the event as the audit log shows it. */
export function webhookBody(event: typeof auditEvents.$inferSelect): string {
  const data = eventJson(event);
  return JSON.stringify({ type: data.type, timestamp: data.at, data });
}

/** One POST of the event to the receiver: null when it answered 2xx, else what went wrong. */
async function post(
  webhooks: Config["webhooks"],
  event: typeof auditEvents.$inferSelect,
): Promise<{ status: number | null; error: string } | null> {
  if (webhooks === undefined) return { status: null, error: "WEBHOOK_URL is not set" };
  if ("problem" in webhooks) return { status: null, error: webhooks.problem };
  const body = webhookBody(event);
  // A fresh timestamp, and so a fresh signature, on every attempt; the id stays the event's.
  const timestamp = Math.floor(Date.now() / 1000);
  try {
    const response = await fetch(webhooks.url, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "notes-api-webhooks/1",
        "webhook-id": event.id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": await signature(webhooks.key, event.id, timestamp, body),
      },
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
    });
    await response.body?.cancel();
    return response.ok ? null : { status: response.status, error: `answered ${response.status}` };
  } catch (err) {
    const timedOut = err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
    return {
      status: null,
      error: timedOut ? `no answer within ${WEBHOOK_TIMEOUT_MS / 1000} s` : describeError(err).errorMessage,
    };
  }
}

/** Seconds to wait before `at`, as a queue's delay takes them (a longer wait is sent again when it arrives early). */
function delayUntil(at: number, now: number): number {
  return Math.min(Math.max(Math.ceil((at - now) / 1000), 0), MAX_QUEUE_DELAY_SECONDS);
}

/**
 * Attempt `message.attempt` of the delivery of event `message.id`: claimed, sent, its outcome written, the next
 * attempt queued. A message that arrives before its attempt is due (a wait longer than the queue's longest delay)
 * is queued again for the rest; one whose attempt is not the delivery's next (a copy) is dropped.
 */
export async function deliver(courier: Courier, message: DeliveryMessage): Promise<void> {
  const { db, webhooks, queue, log } = courier;
  const now = Date.now();
  const { claimed, delivery } = await claimAttempt(db, message.id, message.attempt, now);
  if (!claimed) {
    const early =
      delivery?.state === "pending" && delivery.attempts === message.attempt && delivery.nextAttemptAt > now;
    if (early) await enqueue(queue, [message], log, delayUntil(delivery.nextAttemptAt, now));
    return;
  }
  const { attempts, windowStart, event } = claimed;
  const failure = await post(webhooks, event);
  if (failure === null) {
    await delivered(db, event.id, attempts);
    log.info("webhook_delivered", { eventId: event.id, type: event.type, attempts });
    return;
  }
  const retryBase = webhooks && !("problem" in webhooks) ? webhooks.retryBaseSeconds : 30;
  const retry = retryAfter(attempts, windowStart, retryBase, Date.now());
  await attemptFailed(db, event.id, { attempts, ...failure, retry, now: Date.now() });
  if ("failed" in retry) {
    log.error("webhook_failed", { eventId: event.id, type: event.type, attempts, error: failure.error });
    return;
  }
  log.warn("webhook_attempt_failed", { eventId: event.id, attempts, error: failure.error });
  await enqueue(queue, [{ id: event.id, attempt: attempts }], log, delayUntil(retry.nextAttemptAt, Date.now()));
}

/** The queue's consumer (index.ts): every message of the batch at once; a message whose database work failed is retried. */
export async function deliverBatch(courier: Courier, batch: MessageBatch<unknown>): Promise<void> {
  await Promise.all(
    batch.messages.map(async (message) => {
      if (!isDeliveryMessage(message.body)) return message.ack();
      try {
        await deliver(courier, message.body);
        message.ack();
      } catch (err) {
        courier.log.error("webhook_delivery_error", { eventId: message.body.id, ...describeError(err) });
        message.retry();
      }
    }),
  );
}

/** Deliveries the cron delivers itself at once when the queue refuses them. */
const DIRECT_DELIVERIES_AT_ONCE = 10;

/**
 * The cron's fallback (scheduled.ts): every delivery that is due and held by no attempt (its message was lost, the
 * queue refused it, its consumer died mid-attempt) is handed to the queue again; if the queue refuses, the cron
 * delivers them itself. How many were handed over, and how.
 */
export async function sweepDeliveries(courier: Courier, now: number): Promise<{ queued: number; delivered: number }> {
  const due = await dueDeliveries(courier.db, now);
  if (due.length === 0) return { queued: 0, delivered: 0 };
  if (await enqueue(courier.queue, due, courier.log)) return { queued: due.length, delivered: 0 };
  for (let start = 0; start < due.length; start += DIRECT_DELIVERIES_AT_ONCE) {
    await Promise.all(due.slice(start, start + DIRECT_DELIVERIES_AT_ONCE).map((message) => deliver(courier, message)));
  }
  return { queued: 0, delivered: due.length };
}
