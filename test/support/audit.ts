import { env } from "cloudflare:workers";

/** An audit event as D1 holds it, its data parsed. */
export interface StoredEvent {
  id: string;
  type: string;
  user_id: number;
  actor: string;
  at: number;
  ip: string | null;
  user_agent: string | null;
  data: Record<string, unknown>;
  closed: number;
}

interface EventRow extends Omit<StoredEvent, "data"> {
  data: string;
}

/**
 * The events of account `userId` (every type, or those of `type`) in the order they were written, read with plain SQL:
 * those of the account as it is now (an id can come back after a deletion: a deleted account's events are closed).
 */
export async function eventsOf(userId: number, type?: string): Promise<StoredEvent[]> {
  return events(userId, type, 0);
}

/** The events of the deleted account that had the id `userId` (closed with it). */
export async function eventsOfDeleted(userId: number, type?: string): Promise<StoredEvent[]> {
  return events(userId, type, 1);
}

async function events(userId: number, type: string | undefined, closed: number): Promise<StoredEvent[]> {
  const { results } = await env.DB.prepare(
    "SELECT * FROM audit_events WHERE user_id = ?1 AND (?2 IS NULL OR type = ?2) AND closed = ?3 ORDER BY rowid",
  )
    .bind(userId, type ?? null, closed)
    .all<EventRow>();
  return results.map((row) => ({ ...row, data: JSON.parse(row.data) as Record<string, unknown> }));
}

/** The types of account `userId`'s events, oldest first. */
export async function typesOf(userId: number): Promise<string[]> {
  return (await eventsOf(userId)).map((event) => event.type);
}

/** Every event of the database, as stored (to search them all). */
export async function allEvents(): Promise<EventRow[]> {
  return (await env.DB.prepare("SELECT * FROM audit_events ORDER BY at, rowid").all<EventRow>()).results;
}

/** The outbox row of event `id`, or null. */
export async function outboxRow(id: string) {
  return env.DB.prepare("SELECT * FROM webhook_outbox WHERE event_id = ?").bind(id).first<{
    event_id: string;
    state: string;
    attempts: number;
    window_start: number;
    next_attempt_at: number;
    lease_until: number;
    last_attempt_at: number | null;
    last_status: number | null;
    last_error: string | null;
    failed_at: number | null;
  }>();
}

/** Polls `probe` every 50 ms until it answers something other than undefined, or `ms` pass (then undefined). */
export async function eventually<T>(probe: () => Promise<T | undefined>, ms = 5000): Promise<T | undefined> {
  const until = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined || Date.now() > until) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
