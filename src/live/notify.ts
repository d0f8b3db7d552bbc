import type { Context } from "hono";
import type { AccessClaims } from "../lib/access-token";
import { createLogger, describeError } from "../lib/log";
import type { AppEnv, Bindings } from "../types";

/**
 * What the other areas tell the live hubs, and the one module of src/live/ they reach (the notes area by
 * import, the accounts area through index.ts): each tells the hub of one account, after its write has
 * committed, without holding up the answer (waitUntil).
 */

/** The hub of account `userId`: one Durable Object per account, wherever it runs. */
export function hubOf(env: Bindings, userId: number) {
  return env.LIVE_HUB.get(env.LIVE_HUB.idFromName(`account:${userId}`));
}

/**
 * After a write to the caller's notes has committed (a create, a change, a deletion; not a replay, which
 * writes nothing): every socket of the caller's account is told to pull, with the bookmark of the write.
 * Public notes (no caller) have no sockets.
 */
export function notesChanged(c: Context<AppEnv & { Variables: { caller: AccessClaims | undefined } }>): void {
  const { caller, log } = c.var;
  if (!caller) return;
  const told = hubOf(c.env, caller.userId).changed(c.var.bookmark());
  c.executionCtx.waitUntil(
    told.catch((err: unknown) => log.warn("live_poke_failed", { userId: caller.userId, ...describeError(err) })),
  );
}

/**
 * Handed to the accounts area (index.ts, `authArea({ sessionsEnded })`): some of account `userId`'s sessions
 * have ended, and its hub closes the sockets of those.
 */
export async function sessionsEnded(env: Bindings, userId: number): Promise<void> {
  try {
    await hubOf(env, userId).sessionsChanged();
  } catch (err) {
    createLogger({ event_source: "live" }).warn("live_sessions_check_failed", { userId, ...describeError(err) });
  }
}
