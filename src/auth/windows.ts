import { and, eq, sql } from "drizzle-orm";
import { deploymentWindows } from "../db/schema";
import { HOUR } from "../lib/units";
import type { Database } from "../types";
import { claimWindowSql, windowWait, type Window } from "./limits";

/**
 * Fixed windows counted by name across the whole deployment (the table deployment_windows): the failed
 * code tries of every account, the mails the service sends, and per target address the e-mail change
 * codes mailed to it and the tries at proving it. One event claims one slot with one conditional upsert,
 * before the work it allows, so a burst cannot overshoot the limit; work that turned out not to count
 * gives its slot back.
 */

/** Claims one slot of the window `name`: a row (its window start) when there was room, none when not. */
export function claimWindow(db: Database, name: string, limit: number, now: number, length = HOUR) {
  const window = claimWindowSql(deploymentWindows.windowStart, deploymentWindows.count, limit, now, length);
  return db
    .insert(deploymentWindows)
    .values({ name, windowStart: now, count: 1 })
    .onConflictDoUpdate({ target: deploymentWindows.name, set: { windowStart: window.start, count: window.count }, setWhere: window.hasRoom })
    .returning({ windowStart: deploymentWindows.windowStart });
}

/** The window `name` as it stands: to tell a refused claim how long to wait. */
export function windowState(db: Database, name: string) {
  return db.select({ start: deploymentWindows.windowStart, count: deploymentWindows.count }).from(deploymentWindows).where(eq(deploymentWindows.name, name));
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
