import { and, eq, sql, type AnyColumn, type SQL } from "drizzle-orm";
import { deploymentWindows } from "../schema";
import { HOUR } from "../../lib/units";
import type { Database } from "../../types";
import { BUDGET_SHARES } from "../policy";

/**
 * Fixed windows: `count` events since `start`, starting afresh after their length (an hour unless said
 * otherwise). One event claims one slot with one conditional write, before the work it allows, so a burst
 * cannot overshoot the limit; work that turned out not to count gives its slot back. The columns of any
 * table can hold a window (claimWindowSql); the deployment-wide ones are rows of `deployment_windows`, by
 * name: the failed code tries of every account, the mails the service sends, and per target address the
 * e-mail change codes mailed to it and the tries at proving it.
 */

export interface Window {
  start: number;
  count: number;
}

/** What one account, or one client, may spend of a window the deployment shares: one of BUDGET_SHARES shares. */
export function shareOf(limit: number): number {
  return Math.max(1, Math.floor(limit / BUDGET_SHARES));
}

/** Milliseconds until the window has room for one more event, or 0 when it has room now. */
export function windowWait(window: Window, limit: number, now: number, length = HOUR): number {
  return now - window.start < length && window.count >= limit ? window.start + length - now : 0;
}

/**
 * One more event in a window, as SQL for a SET clause, and the condition that the window has room for it.
 * SQLite evaluates every SET expression against the row as it was, so both columns see the old start.
 */
export function claimWindowSql(
  start: AnyColumn,
  count: AnyColumn,
  limit: number,
  now: number,
  length = HOUR,
): { start: SQL; count: SQL; hasRoom: SQL } {
  const expired = sql`${now} - ${start} >= ${length}`;
  return {
    start: sql`CASE WHEN ${expired} THEN ${now} ELSE ${start} END`,
    count: sql`CASE WHEN ${expired} THEN 1 ELSE ${count} + 1 END`,
    hasRoom: sql`(${expired} OR ${count} < ${limit})`,
  };
}

/** Claims one slot of the deployment's window `name`: a row (its window start) when there was room, none when not. */
export function claimWindow(db: Database, name: string, limit: number, now: number, length = HOUR) {
  const window = claimWindowSql(deploymentWindows.windowStart, deploymentWindows.count, limit, now, length);
  return db
    .insert(deploymentWindows)
    .values({ name, windowStart: now, count: 1 })
    .onConflictDoUpdate({
      target: deploymentWindows.name,
      set: { windowStart: window.start, count: window.count },
      setWhere: window.hasRoom,
    })
    .returning({ windowStart: deploymentWindows.windowStart });
}

/** The window `name` as it stands: to tell a refused claim how long to wait. */
export function windowState(db: Database, name: string) {
  return db
    .select({ start: deploymentWindows.windowStart, count: deploymentWindows.count })
    .from(deploymentWindows)
    .where(eq(deploymentWindows.name, name));
}

/** Milliseconds until the window has room again (0 when it has, or no longer exists). */
export function waitFor(state: Window | undefined, limit: number, now: number, length = HOUR): number {
  return state ? windowWait(state, limit, now, length) : 0;
}

/** Gives back a slot claimed in the window that started at `windowStart` (a later window keeps its count). */
export function releaseWindow(db: Database, name: string, windowStart: number) {
  return db
    .update(deploymentWindows)
    .set({ count: sql`max(${deploymentWindows.count} - 1, 0)` })
    .where(and(eq(deploymentWindows.name, name), eq(deploymentWindows.windowStart, windowStart)));
}

/**
 * Claims a slot of the window `name` and reads it in one round trip: the claimed window's start, or how
 * long to wait when it has no room.
 */
export async function claimSlot(
  db: Database,
  name: string,
  limit: number,
  now: number,
): Promise<{ windowStart: number } | { waitMs: number }> {
  const [[slot], [state]] = await db.batch([claimWindow(db, name, limit, now), windowState(db, name)]);
  return slot ?? { waitMs: waitFor(state, limit, now) };
}
