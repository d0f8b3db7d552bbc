import { sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { EventType } from "../lib/event-types";

/**
 * The audit log's seam (eslint.config.js, SEAMS): what the areas that record events import of it. The writer itself
 * is handed to them at wiring (index.ts): a request's `c.var.audit`, an AuditTrail, whose statements go into the
 * batch of the change they record, so that no change commits without its event and no event without its change.
 */

export { EVENT_TYPES, isEventType, type EventType } from "../lib/event-types";

/** Who made the change: the account's owner, an operator through /admin, or the service itself (the cron). */
export const ACTORS = ["user", "admin", "system"] as const;
export type Actor = (typeof ACTORS)[number];

/**
 * A value of an event's `data`: JSON, or an SQL expression the statement computes (a passkey's name read as it is
 * removed, the sessions a statement ends). Never a password, code, token, secret or TOTP seed.
 */
export type EventValue = string | number | boolean | null | readonly string[] | SQL;
export type EventData = Readonly<Record<string, EventValue>>;

export interface NewEvent {
  type: EventType;
  /** The account: its id, or an expression giving it (an e-mail change's undo knows it only from its token). */
  userId: number | SQL;
  /** "user" when absent. */
  actor?: Actor;
  data?: EventData;
  /** Set it (newEventId) to name the event in a later statement's condition (AuditTrail.recorded). */
  id?: string;
  /** The change's own time, when it stores one (a session's, an account's creation); now when absent. */
  at?: number;
}

/**
 * The writer of one request (or of the cron): statements for the batch of the change they record, and, once the
 * request has answered, the new events of subscribed types handed to the webhook queue.
 */
export interface AuditTrail {
  /**
   * The statements that record `event` (and queue it for the webhook when its type is subscribed), each only while
   * `when` holds. Put them in the batch of the change: after it with a condition that is true once it is made, or
   * before it (a deletion) with the condition that it will be.
   */
  record(event: NewEvent, when?: SQL): BatchItem<"sqlite">[];
  /** The condition that the event `id` was recorded (earlier in the same batch). */
  recorded(id: string): SQL;
  /**
   * A failed sign-in of account `userId`, as a batch of its own: at most FAILED_SIGN_INS_PER_HOUR events an hour
   * per account, the last of which counts the failures after it (`data.suppressed`), decided in one transaction.
   */
  failedSignIn(userId: number, data: EventData): BatchItem<"sqlite">[];
  /**
   * The statements that record one event of `type` for each row of `rows` (an SQL `SELECT` of `user_id` and `data`,
   * a JSON object): for a change made to many accounts at once (the cron's deletion of unverified accounts). Put
   * them before the change.
   */
  recordEach(type: EventType, rows: SQL): BatchItem<"sqlite">[];
}

/** A new event id: `evt_` and 128 random bits in hex (Standard Webhooks' `webhook-id`). */
export function newEventId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `evt_${[...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * The condition that the statement just before in the batch changed a row (SQLite's `changes()`): the `when` of an
 * event recorded right after its change, whose own condition cannot be read again after it (a code used up with
 * it, a row that was already so). Only directly after the change, and never for `user.deleted` (whose first
 * statement is itself a write).
 */
export function changedRows(): SQL {
  return sql`changes() > 0`;
}
