import { createLogger, describeError } from "../lib/log";
import type { NotesChanged } from "../notes/area";
import type { Bindings } from "../types";

/**
 * What the other areas tell the live hubs, handed to them at wiring (index.ts): each tells the hub of one
 * account, after its write has committed, without holding up the answer (the area calls it in waitUntil).
 */

/** The hub of account `userId`: one Durable Object per account, wherever it runs. */
export function hubOf(env: Bindings, userId: number) {
  return env.LIVE_HUB.get(env.LIVE_HUB.idFromName(`account:${userId}`));
}

/**
 * Handed to the notes area (index.ts, `notesArea({ notesChanged })`): after a write to account `userId`'s notes
 * has committed (a create, a change, a deletion; not a replay, which writes nothing), every socket of the
 * account is told to pull, with the bookmark of the write.
 */
export const notesChanged: NotesChanged = async (env, log, userId, bookmark) => {
  try {
    await hubOf(env, userId).changed(bookmark);
  } catch (err) {
    log.warn("live_poke_failed", { userId, ...describeError(err) });
  }
};

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
