import { and, desc, eq, lte, sql } from "drizzle-orm";
import { orderedPage } from "../../db/client";
import type { Database } from "../../types";
import { auditEvents, webhookOutbox } from "../schema";
import { WEBHOOK_LEASE_MS, WEBHOOK_RETRY_WINDOW_MS, WEBHOOK_SWEEP_LIMIT } from "../policy";

/**
 * The SQL of the webhook outbox: each attempt claimed by one conditional write before anything is sent (so two
 * consumers never send one attempt), its outcome written only by the attempt that claimed it, the failed deliveries
 * listed and sent again. See docs/operations.md, "Webhooks".
 */

/**
 * Claims attempt `attempt` of the delivery of event `eventId`, when it is due and no other attempt holds it: the event
 * to send and the attempt's number; or, unclaimed, the delivery as it stands (to tell an early message from a copy).
 */
export async function claimAttempt(db: Database, eventId: string, attempt: number, now: number) {
  const ofEvent = eq(webhookOutbox.eventId, eventId);
  const [claimed, [event], [delivery]] = await db.batch([
    db
      .update(webhookOutbox)
      .set({ attempts: sql`${webhookOutbox.attempts} + 1`, leaseUntil: now + WEBHOOK_LEASE_MS, lastAttemptAt: now })
      .where(
        and(
          ofEvent,
          eq(webhookOutbox.state, "pending"),
          eq(webhookOutbox.attempts, attempt),
          lte(webhookOutbox.nextAttemptAt, now),
          lte(webhookOutbox.leaseUntil, now),
        ),
      )
      .returning({ attempts: webhookOutbox.attempts, windowStart: webhookOutbox.windowStart }),
    db.select().from(auditEvents).where(eq(auditEvents.id, eventId)),
    db.select().from(webhookOutbox).where(ofEvent),
  ]);
  const [attemptClaimed] = claimed;
  if (attemptClaimed && event) return { claimed: { ...attemptClaimed, event }, delivery: undefined };
  return { claimed: undefined, delivery };
}

/** The receiver took the event: its delivery is done (only by the attempt that claimed it). */
export async function delivered(db: Database, eventId: string, attempts: number): Promise<void> {
  await db.delete(webhookOutbox).where(and(eq(webhookOutbox.eventId, eventId), eq(webhookOutbox.attempts, attempts)));
}

/** What a failed attempt leaves: when to try next, or that the delivery has failed for good. */
export type Retry = { nextAttemptAt: number } | { failed: true };

/**
 * The next attempt after failed attempt number `attempts`: `retryBaseSeconds`, doubled for each attempt before it, if
 * that is within WEBHOOK_RETRY_WINDOW_MS of the delivery's start; else the delivery has failed.
 */
export function retryAfter(attempts: number, windowStart: number, retryBaseSeconds: number, now: number): Retry {
  const delayMs = retryBaseSeconds * 1000 * 2 ** (attempts - 1);
  const next = now + delayMs;
  return next <= windowStart + WEBHOOK_RETRY_WINDOW_MS ? { nextAttemptAt: next } : { failed: true };
}

/** Writes a failed attempt's outcome (only by the attempt that claimed it). */
export async function attemptFailed(
  db: Database,
  eventId: string,
  attempt: { attempts: number; status: number | null; error: string; retry: Retry; now: number },
): Promise<void> {
  const { attempts, status, error, retry, now } = attempt;
  const outcome =
    "failed" in retry ? { state: "failed" as const, failedAt: now } : { nextAttemptAt: retry.nextAttemptAt };
  await db
    .update(webhookOutbox)
    .set({ ...outcome, leaseUntil: 0, lastStatus: status, lastError: error })
    .where(and(eq(webhookOutbox.eventId, eventId), eq(webhookOutbox.attempts, attempts)));
}

/**
 * Deliveries due and not held by an attempt (the cron hands them to the queue), at most WEBHOOK_SWEEP_LIMIT, the most
 * overdue first: each with its next attempt.
 */
export function dueDeliveries(db: Database, now: number) {
  return db
    .select({ id: webhookOutbox.eventId, attempt: webhookOutbox.attempts })
    .from(webhookOutbox)
    .where(
      and(
        eq(webhookOutbox.state, "pending"),
        lte(webhookOutbox.nextAttemptAt, now),
        lte(webhookOutbox.leaseUntil, now),
      ),
    )
    .orderBy(orderedPage(WEBHOOK_SWEEP_LIMIT - 1, sql`${webhookOutbox.nextAttemptAt}`));
}

/** A page of failed deliveries, the latest failure first, after the cursor's; `limit` and one more. */
export function failedPage(db: Database, page: { after?: readonly [number, string]; limit: number }) {
  const { after, limit } = page;
  const older =
    after === undefined
      ? undefined
      : sql`(${webhookOutbox.failedAt} < ${after[0]} OR (${webhookOutbox.failedAt} = ${after[0]} AND ${webhookOutbox.eventId} < ${after[1]}))`;
  return db
    .select({ delivery: webhookOutbox, event: auditEvents })
    .from(webhookOutbox)
    .innerJoin(auditEvents, eq(auditEvents.id, webhookOutbox.eventId))
    .where(and(eq(webhookOutbox.state, "failed"), older))
    .orderBy(orderedPage(limit, desc(webhookOutbox.failedAt), desc(webhookOutbox.eventId)));
}

/**
 * Puts a failed delivery back to pending, due now, with a fresh WEBHOOK_RETRY_WINDOW_MS of attempts: false when no
 * failed delivery has this id.
 */
export async function retryFailed(db: Database, eventId: string, now: number): Promise<boolean> {
  const [retried] = await db
    .update(webhookOutbox)
    .set({ state: "pending", attempts: 0, windowStart: now, nextAttemptAt: now, leaseUntil: 0, failedAt: null })
    .where(and(eq(webhookOutbox.eventId, eventId), eq(webhookOutbox.state, "failed")))
    .returning({ id: webhookOutbox.eventId });
  return retried !== undefined;
}
