import { and, eq, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Config } from "../config";
import type { Database } from "../db/client";
import type { EventType } from "../lib/event-types";
import { auditEvents, failedSignInWindows, webhookOutbox } from "./schema";
import { newEventId, type Actor, type AuditTrail, type EventData, type EventValue, type NewEvent } from "./events";
import { FAILED_SIGN_IN_WINDOW_MS, FAILED_SIGN_INS_PER_HOUR } from "./policy";

/**
 * The audit log's writer: the statements that record an event, for the batch of the change it records (one
 * transaction, so neither commits without the other), and the event's row in the webhook outbox when its type is
 * subscribed. What a request adds (its client's network and User-Agent) is given by requests.ts.
 */

/** What every event of one request (or cron run) shares. */
export interface TrailContext {
  db: Database;
  webhooks: Config["webhooks"];
  actor: Actor;
  ip: string | null;
  userAgent: string | null;
}

/**
 * Whether events of `type` go to the outbox: a subscribed type; every type while the webhook settings are unusable
 * (which are subscribed cannot be known, and an event must not be lost: docs/operations.md); none without WEBHOOK_URL.
 */
export function subscribed(webhooks: Config["webhooks"], type: EventType): boolean {
  if (webhooks === undefined) return false;
  if ("problem" in webhooks) return true;
  return webhooks.events === "*" || webhooks.events.includes(type);
}

/** A JSON value of an event's data as SQL: a value SQLite's json_object() writes as the same JSON. */
function jsonValue(value: EventValue): SQL {
  if (value === null) return sql`NULL`;
  if (typeof value === "string" || typeof value === "number") return sql`${value}`;
  if (typeof value === "boolean" || Array.isArray(value)) return sql`json(${JSON.stringify(value)})`;
  return value as SQL;
}

/** The event's `data` as a JSON object built in SQL. */
export function dataJson(data: EventData = {}): SQL {
  const entries = Object.entries(data);
  if (entries.length === 0) return sql`'{}'`;
  return sql`json_object(${sql.join(
    entries.map(([key, value]) => sql`${key}, ${jsonValue(value)}`),
    sql`, `,
  )})`;
}

/** The outbox row of the event `id`, only once the event was recorded (INSERT … SELECT from it). */
function outboxRow(db: Database, id: string | SQL) {
  return db.insert(webhookOutbox).select(
    // Every column, in the table's order (drizzle's rule for INSERT … SELECT).
    db
      .select({
        eventId: auditEvents.id,
        state: sql<"pending">`'pending'`.as("state"),
        attempts: sql<number>`0`.as("attempts"),
        windowStart: sql<number>`${auditEvents.at}`.as("window_start"),
        nextAttemptAt: sql<number>`${auditEvents.at}`.as("next_attempt_at"),
        leaseUntil: sql<number>`0`.as("lease_until"),
        lastAttemptAt: sql<number | null>`NULL`.as("last_attempt_at"),
        lastStatus: sql<number | null>`NULL`.as("last_status"),
        lastError: sql<string | null>`NULL`.as("last_error"),
        failedAt: sql<number | null>`NULL`.as("failed_at"),
      })
      .from(auditEvents)
      .where(typeof id === "string" ? eq(auditEvents.id, id) : id),
  );
}

/** The condition that the event `id` was recorded (earlier in the batch). */
export function recorded(id: string): SQL {
  return sql`EXISTS (SELECT 1 FROM ${auditEvents} WHERE ${auditEvents.id} = ${id})`;
}

/** What the writer functions share: the request's (or the cron's) context, and the ids queued for the webhook. */
interface Writer {
  context: TrailContext;
  queued: string[];
}

/** The statements that record `event`, each only while `when` holds (AuditTrail.record). */
function record({ context, queued }: Writer, event: NewEvent, when?: SQL): BatchItem<"sqlite">[] {
  const { db } = context;
  const id = event.id ?? newEventId();
  const userId = typeof event.userId === "number" ? sql`${event.userId}` : event.userId;
  const deleted = event.type === "user.deleted";
  const insert = db.insert(auditEvents).select(
    db
      .select({
        id: sql<string>`${id}`.as("id"),
        type: sql<string>`${event.type}`.as("type"),
        userId: sql<number>`${userId}`.as("user_id"),
        actor: sql<Actor>`${event.actor ?? context.actor}`.as("actor"),
        at: sql<number>`${event.at ?? Date.now()}`.as("at"),
        ip: sql<string | null>`${context.ip}`.as("ip"),
        userAgent: sql<string | null>`${context.userAgent}`.as("user_agent"),
        data: sql<string>`${dataJson(event.data)}`.as("data"),
        closed: sql<boolean>`${deleted ? 1 : 0}`.as("closed"),
      })
      .from(sql`(SELECT 1)`)
      .where(and(when, sql`${userId} IS NOT NULL`)),
  );
  // The deleted account's events are closed with it: a later account given its id does not see them.
  const close = deleted
    ? [
        db
          .update(auditEvents)
          .set({ closed: true })
          .where(and(eq(auditEvents.userId, userId), when)),
      ]
    : [];
  if (!subscribed(context.webhooks, event.type)) return [...close, insert];
  queued.push(id);
  return [...close, insert, outboxRow(db, id)];
}

/** A failed sign-in as a batch of its own, at most FAILED_SIGN_INS_PER_HOUR an hour (AuditTrail.failedSignIn). */
function failedSignIn(writer: Writer, userId: number, data: EventData): BatchItem<"sqlite">[] {
  const { db } = writer.context;
  const id = newEventId();
  const now = Date.now();
  const { windowStart, failures, lastEventId } = failedSignInWindows;
  const fresh = sql`${windowStart} <= ${now - FAILED_SIGN_IN_WINDOW_MS}`;
  const ofUser = eq(failedSignInWindows.userId, userId);
  return [
    // One failure more in the account's window, and whether this one is recorded: decided by this one write.
    db
      .insert(failedSignInWindows)
      .values({ userId, windowStart: now, failures: 1, lastEventId: id })
      .onConflictDoUpdate({
        target: failedSignInWindows.userId,
        set: {
          failures: sql`CASE WHEN ${fresh} THEN 1 ELSE ${failures} + 1 END`,
          lastEventId: sql`CASE WHEN ${fresh} OR ${failures} < ${FAILED_SIGN_INS_PER_HOUR} THEN ${id} ELSE ${lastEventId} END`,
          windowStart: sql`CASE WHEN ${fresh} THEN ${now} ELSE ${windowStart} END`,
        },
      }),
    ...record(
      writer,
      { id, type: "user.sign_in_failed", userId, data, at: now },
      sql`EXISTS (SELECT 1 FROM ${failedSignInWindows} WHERE ${and(ofUser, eq(lastEventId, id))})`,
    ),
    // Past the limit, the window's last event counts the failures after it.
    db
      .update(auditEvents)
      .set({
        data: sql`json_set(${auditEvents.data}, '$.suppressed', (SELECT ${failures} - ${FAILED_SIGN_INS_PER_HOUR} FROM ${failedSignInWindows} WHERE ${ofUser}))`,
      })
      .where(
        sql`${auditEvents.id} = (SELECT ${lastEventId} FROM ${failedSignInWindows} WHERE ${ofUser} AND ${failures} > ${FAILED_SIGN_INS_PER_HOUR})`,
      ),
  ];
}

/** One event of `type` for each row of `rows` (AuditTrail.recordEach). */
function recordEach({ context }: Writer, type: EventType, rows: SQL): BatchItem<"sqlite">[] {
  const { db } = context;
  const now = Date.now();
  const deleted = type === "user.deleted";
  const insert = db
    .insert(auditEvents)
    .select(
      db
        .select({
          id: sql<string>`'evt_' || lower(hex(randomblob(16)))`.as("id"),
          type: sql<string>`${type}`.as("type"),
          userId: sql<number>`source.user_id`.as("user_id"),
          actor: sql<Actor>`${context.actor}`.as("actor"),
          at: sql<number>`${now}`.as("at"),
          ip: sql<string | null>`${context.ip}`.as("ip"),
          userAgent: sql<string | null>`${context.userAgent}`.as("user_agent"),
          data: sql<string>`source.data`.as("data"),
          closed: sql<boolean>`${deleted ? 1 : 0}`.as("closed"),
        })
        .from(sql`(${rows}) AS source`),
    )
    .returning({ id: auditEvents.id });
  const close = deleted
    ? [
        db
          .update(auditEvents)
          .set({ closed: true })
          .where(sql`${auditEvents.userId} IN (SELECT user_id FROM (${rows}))`),
      ]
    : [];
  if (!subscribed(context.webhooks, type)) return [...close, insert];
  // The events just written: of this type, actor and time, not yet in the outbox. The cron hands them to the queue.
  const justWritten = sql`${auditEvents.type} = ${type} AND ${auditEvents.actor} = ${context.actor} AND ${auditEvents.at} = ${now}
    AND NOT EXISTS (SELECT 1 FROM ${webhookOutbox} WHERE ${webhookOutbox.eventId} = ${auditEvents.id})`;
  return [...close, insert, outboxRow(db, justWritten)];
}

/**
 * A writer for `context`. `queued` collects the ids of the events put in the outbox, to hand to the queue once the
 * batches that wrote them have committed (requests.ts).
 */
export function trailOf(context: TrailContext, queued: string[] = []): AuditTrail {
  const writer = { context, queued };
  return {
    record: (event, when) => record(writer, event, when),
    recorded,
    failedSignIn: (userId, data) => failedSignIn(writer, userId, data),
    recordEach: (type, rows) => recordEach(writer, type, rows),
  };
}
