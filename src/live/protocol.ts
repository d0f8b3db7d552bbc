/**
 * What goes over a live-updates socket (docs/live.md), written once for the hub, the routes' description
 * and the tests. The socket carries no data, only "pull now": the changes feed (GET /changes) stays the one
 * source of truth, so a frame lost with a dropped connection loses nothing (the client pulls on `ready`).
 */

import { KiB, MINUTE, SECOND } from "../lib/units";

/** How long a ticket may wait for its socket: long enough for a slow network, short enough to be worthless in a log. */
export const TICKET_TTL_MS = 30 * SECOND;

/** The close code of a socket whose session has ended (logout, password change, …): log in again. */
export const CLOSE_SESSION_ENDED = 4001;
export const SESSION_ENDED_REASON = "session ended";

/**
 * A client sends only pings, which the runtime answers without waking the hub; any other message wakes it (a billed
 * event) and is ignored. So a socket may send at most LIVE_MESSAGES_PER_MINUTE of them in a minute, none larger than
 * LIVE_MESSAGE_MAX_BYTES: the hub closes a socket past either, with these codes (RFC 6455's), and the client
 * reconnects as after any other close.
 */
export const LIVE_MESSAGE_MAX_BYTES = KiB;
export const LIVE_MESSAGES_PER_MINUTE = 10;
export const LIVE_MESSAGE_WINDOW_MS = MINUTE;
export const CLOSE_MESSAGE_TOO_BIG = 1009;
export const MESSAGE_TOO_BIG_REASON = "message too big";
export const CLOSE_TOO_MANY_MESSAGES = 1008;
export const TOO_MANY_MESSAGES_REASON = "too many messages";

export const Frame = {
  /** The first frame, sent once the socket is registered: pull now, and every change after it will be told. */
  ready: '{"type":"ready"}',
  /** What a client sends to keep an idle connection open, exactly these bytes; answered with `pong` by the runtime. */
  ping: '{"type":"ping"}',
  pong: '{"type":"pong"}',
} as const;

/**
 * After a write to the account's notes: its D1 bookmark, to send as X-D1-Bookmark with the pull, so that no
 * replica older than the write answers it. Nothing else: no title, no content, no id.
 */
export function changedFrame(bookmark: string | null): string {
  return bookmark === null ? '{"type":"changed"}' : JSON.stringify({ type: "changed", bookmark });
}
