import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { EVENT_TYPES } from "../lib/event-types";

/**
 * The audit log's tables (docs/operations.md, "Audit log"). Only src/audit/ names them; the other areas write events
 * through the AuditTrail they are handed at wiring (audit/events.ts). No foreign key to `users`: an event outlives
 * its account (`user.deleted` is one), and is removed by age only (AUDIT_RETENTION_DAYS).
 */

/** One row per security event (item 7 of issue 46). */
export const auditEvents = sqliteTable(
  "audit_events",
  {
    // `evt_` and 128 random bits in hex: the event's id, and its webhook's `webhook-id`.
    id: text("id").primaryKey(),
    type: text("type", { enum: EVENT_TYPES }).notNull(),
    userId: integer("user_id").notNull(),
    actor: text("actor", { enum: ["user", "admin", "system"] }).notNull(),
    // Milliseconds since the epoch.
    at: integer("at").notNull(),
    // The client's address cut to its /24 (IPv4) or /48 (IPv6); null when the request had none (the cron).
    ip: text("ip"),
    userAgent: text("user_agent"),
    // A JSON object: what the event type carries (never a password, code, token, secret or TOTP seed).
    data: text("data").notNull().default("{}"),
    // Set when the account is deleted: account ids can come back (docs/design.md), and a later account given the
    // same id must not see this one's activity. Admins still list them by user id.
    closed: integer("closed", { mode: "boolean" }).notNull().default(false),
  },
  (table) => [
    index("audit_events_user_at").on(table.userId, table.at, table.id),
    index("audit_events_at").on(table.at, table.id),
    index("audit_events_type_at").on(table.type, table.at, table.id),
  ],
);

/** The states of a webhook delivery: waiting for its (next) attempt, or given up after WEBHOOK_RETRY_WINDOW_MS. */
export const DELIVERY_STATES = ["pending", "failed"] as const;

/**
 * The outbox: one row per event of a subscribed type (WEBHOOK_EVENTS), written in the event's own batch, deleted once
 * a receiver took it with a 2xx. The queue and the cron deliver from here (audit/webhooks/).
 */
export const webhookOutbox = sqliteTable(
  "webhook_outbox",
  {
    eventId: text("event_id")
      .primaryKey()
      .references(() => auditEvents.id, { onDelete: "cascade" }),
    state: text("state", { enum: DELIVERY_STATES }).notNull().default("pending"),
    // Attempts claimed so far; a queue message names the attempt it is for, so a copy of it is dropped.
    attempts: integer("attempts").notNull().default(0),
    // The event's time, or the admin's retry: attempts go on for WEBHOOK_RETRY_WINDOW_MS from it.
    windowStart: integer("window_start").notNull(),
    nextAttemptAt: integer("next_attempt_at").notNull(),
    // Until when an attempt in flight holds the row (WEBHOOK_LEASE_MS); 0 when none does.
    leaseUntil: integer("lease_until").notNull().default(0),
    lastAttemptAt: integer("last_attempt_at"),
    // The receiver's status, or null when it did not answer (timeout, refused connection).
    lastStatus: integer("last_status"),
    lastError: text("last_error"),
    failedAt: integer("failed_at"),
  },
  (table) => [
    index("webhook_outbox_due").on(table.state, table.nextAttemptAt),
    index("webhook_outbox_failed").on(table.state, table.failedAt, table.eventId),
  ],
);

/**
 * Failed sign-ins per account in a fixed window (FAILED_SIGN_IN_WINDOW_MS): how many, and the last one recorded as
 * an event, which counts the failures past FAILED_SIGN_INS_PER_HOUR. One row per account that has failed.
 */
export const failedSignInWindows = sqliteTable("audit_failed_sign_in_windows", {
  userId: integer("user_id").primaryKey(),
  windowStart: integer("window_start").notNull(),
  failures: integer("failures").notNull().default(0),
  lastEventId: text("last_event_id").notNull(),
});
