import { createLogger, describeError } from "../lib/log";
import type { NotesWatchers } from "../notes/area";
import type { Bindings } from "../types";
import { watchedAmong, watching } from "./watchers";

/**
 * What the other areas tell the live hubs, handed to them at wiring (index.ts): each tells the hub of one
 * account, after its write has committed, without holding up the answer (the area calls it in waitUntil).
 */

/** The hub of account `userId`: one Durable Object per account, wherever it runs. */
export function hubOf(env: Bindings, userId: number) {
  return env.LIVE_HUB.get(env.LIVE_HUB.idFromName(`account:${userId}`));
}

/**
 * Handed to the notes area (index.ts, `notesArea({ watchers })`): each note write reads which of the accounts it
 * concerns anyone may be watching (`watching` for one account, `watchedAmong` for a shared note's readers, in the
 * write's own batch), and once it has committed (a create, a change, a deletion, a share's start or end; not a
 * replay, which writes nothing), every socket of each such account is told to pull, with the bookmark of the write.
 */
export const notesWatchers: NotesWatchers = {
  watching,
  watchedAmong,
  async changed(env, log, userId, bookmark) {
    try {
      await hubOf(env, userId).changed(userId, bookmark);
    } catch (err) {
      log.warn("live_poke_failed", { userId, ...describeError(err) });
    }
  },
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
