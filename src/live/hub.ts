import { DurableObject } from "cloudflare:workers";
import { liveSessionsAmong } from "../auth/caller";
import { databaseOf } from "../db/client";
import { createLogger, describeError } from "../lib/log";
import { SECOND } from "../lib/units";
import type { Bindings } from "../types";
import type { Claimed } from "./tickets";
import { forgetWatchers } from "./watchers";
import {
  CLOSE_MESSAGE_TOO_BIG,
  CLOSE_SESSION_ENDED,
  CLOSE_TOO_MANY_MESSAGES,
  changedFrame,
  Frame,
  LIVE_MESSAGE_MAX_BYTES,
  LIVE_MESSAGE_WINDOW_MS,
  LIVE_MESSAGES_PER_MINUTE,
  MESSAGE_TOO_BIG_REASON,
  SESSION_ENDED_REASON,
  TOO_MANY_MESSAGES_REASON,
} from "./protocol";

/**
 * The hub of one account's live sockets: a Durable Object per account (named by its user id, see notify.ts),
 * on the WebSocket Hibernation API, so an idle socket costs nothing: the runtime answers pings itself
 * (setWebSocketAutoResponse) and the hub may be evicted from memory while its sockets stay open; each socket
 * keeps its session id as its tag and the little else it needs as its attachment. It is woken by:
 * - `fetch`: a socket to accept, for a ticket the worker has already claimed (routes.ts);
 * - `reserve`: a place for a ticket about to be handed out, so the socket cap holds under a burst;
 * - `changed`: a write to the account's notes has committed: "pull now" to every socket;
 * - `sessionsChanged`: some of the account's sessions have ended: the sockets of those close with 4001;
 * - `alarm`: the earliest session of its sockets is due to expire: the same re-check.
 */

/**
 * What a socket keeps across hibernation: its account, when its session ends as last read, and the messages it sent
 * in its current minute (those that woke the hub: see LIVE_MESSAGES_PER_MINUTE).
 */
interface Attachment {
  userId: number;
  sessionEnds: number;
  windowStart?: number;
  messages?: number;
}

const encoder = new TextEncoder();

/** A session's expiry is re-checked this long after it is due, so that the check finds it ended. */
const EXPIRY_MARGIN_MS = SECOND;

const log = createLogger({ event_source: "live_hub" });

/**
 * The request the worker sends the hub to open a socket for a claimed ticket, with the account's cap
 * (LIVE_SOCKETS_PER_ACCOUNT, read by the worker's config): an internal URL, which only the binding reaches.
 */
export function connectRequest({ userId, sessionId }: Claimed, ticketHash: string, cap: number): Request {
  const query = new URLSearchParams({ user: String(userId), session: sessionId, ticket: ticketHash, cap: String(cap) });
  return new Request(`https://live-hub.internal/connect?${query.toString()}`, { headers: { Upgrade: "websocket" } });
}

export class LiveHub extends DurableObject<Bindings> {
  constructor(ctx: DurableObjectState, env: Bindings) {
    super(ctx, env);
    // Answered by the runtime without waking the hub: a client's keep-alive costs nothing.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(Frame.ping, Frame.pong));
  }

  /**
   * Holds a place for a ticket until it is used or `until`: false when the account's open sockets and the
   * places held already make `cap`. The hub runs one call at a time and this one never waits, so of any
   * burst of tickets no more are handed out than there are places.
   */
  reserve(ticketHash: string, until: number, cap: number): boolean {
    const places = this.places();
    const held = places.exec<{ n: number }>("SELECT count(*) AS n FROM places").one().n;
    if (this.openSockets().length + held >= cap) return false;
    places.exec("INSERT INTO places (ticket, until) VALUES (?, ?)", ticketHash, until);
    return true;
  }

  /**
   * Opens a socket for a claimed ticket: 101 with the client's end, or 429 when the cap is reached after all
   * (a ticket used after its place lapsed). The socket is registered, then told `ready`, so a client that
   * pulls on `ready` misses nothing. Its session is then read once more: a session that ended between the
   * claim and the registration (whose notice reached the hub before the socket) closes it at once.
   */
  override async fetch(request: Request): Promise<Response> {
    const query = new URL(request.url).searchParams;
    const [userId, sessionId, ticket, cap] = [
      Number(query.get("user")),
      query.get("session") ?? "",
      query.get("ticket") ?? "",
      Number(query.get("cap")),
    ];
    this.places().exec("DELETE FROM places WHERE ticket = ?", ticket);
    if (this.openSockets().length >= cap) return new Response(null, { status: 429 });
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, [sessionId]);
    server.serializeAttachment({ userId, sessionEnds: Number.MAX_SAFE_INTEGER } satisfies Attachment);
    server.send(Frame.ready);
    await this.recheck().catch((err: unknown) => log.error("live_session_check_failed", describeError(err)));
    return new Response(null, { status: 101, webSocket: client });
  }

  /**
   * A write to the account's notes has committed: every open socket is told to pull. With none (the account
   * was marked watched, but its sockets have gone), the mark goes, and later writes stop poking.
   */
  async changed(userId: number, bookmark: string | null): Promise<void> {
    const frame = changedFrame(bookmark);
    const sockets = this.openSockets();
    for (const socket of sockets) socket.send(frame);
    if (sockets.length === 0) await this.unwatchedIfIdle(userId);
  }

  /** Some of the account's sessions have ended (told by the accounts area after its write committed). */
  async sessionsChanged(): Promise<void> {
    await this.recheck();
  }

  override async alarm(): Promise<void> {
    await this.recheck();
  }

  /**
   * The client closed: our end answers with the same code (one that may not be sent, such as 1005 or 1006, as 1000).
   */
  override async webSocketClose(socket: WebSocket, code: number): Promise<void> {
    try {
      socket.close(code === 1000 || (code >= 3000 && code <= 4999) ? code : 1000);
    } catch {
      // Closed already: the runtime answered it.
    }
    await this.unwatchedIfIdle((socket.deserializeAttachment() as Attachment).userId);
  }

  /** A socket failed: as a close. */
  override async webSocketError(socket: WebSocket): Promise<void> {
    await this.unwatchedIfIdle((socket.deserializeAttachment() as Attachment).userId);
  }

  /**
   * With no socket open and no ticket's place held, the account is no longer watched: its mark in D1 goes
   * (watchers.ts says why a ticket handed out meanwhile keeps it), so its writes stop poking this hub.
   */
  private async unwatchedIfIdle(userId: number): Promise<void> {
    const held = this.places().exec<{ n: number }>("SELECT count(*) AS n FROM places").one().n;
    if (this.openSockets().length > 0 || held > 0) return;
    await forgetWatchers(databaseOf(this.env.DB), userId, Date.now()).catch((err: unknown) =>
      log.warn("live_unwatch_failed", { userId, ...describeError(err) }),
    );
  }

  /**
   * The hub reads nothing from a socket: ping is answered by the runtime without waking it, anything else is ignored,
   * but counted: a message over LIVE_MESSAGE_MAX_BYTES, or one past LIVE_MESSAGES_PER_MINUTE in the socket's minute,
   * closes the socket, so no client can keep the hub awake (each wake is a billed event).
   */
  override webSocketMessage(socket: WebSocket, message: string | ArrayBuffer): void {
    const size = typeof message === "string" ? encoder.encode(message).byteLength : message.byteLength;
    if (size > LIVE_MESSAGE_MAX_BYTES) return closeOpen(socket, CLOSE_MESSAGE_TOO_BIG, MESSAGE_TOO_BIG_REASON);
    const attachment = socket.deserializeAttachment() as Attachment;
    const now = Date.now();
    const fresh = attachment.windowStart === undefined || now - attachment.windowStart >= LIVE_MESSAGE_WINDOW_MS;
    const messages = fresh ? 1 : (attachment.messages ?? 0) + 1;
    if (messages > LIVE_MESSAGES_PER_MINUTE)
      return closeOpen(socket, CLOSE_TOO_MANY_MESSAGES, TOO_MANY_MESSAGES_REASON);
    socket.serializeAttachment({
      ...attachment,
      windowStart: fresh ? now : attachment.windowStart,
      messages,
    } satisfies Attachment);
  }

  /**
   * Reads, in one D1 query, which of the sockets' sessions are still live: the others' sockets close with
   * CLOSE_SESSION_ENDED; the rest keep when their session ends, and the alarm is set for the earliest.
   */
  private async recheck(): Promise<void> {
    const sockets = this.openSockets();
    const [first] = sockets;
    if (!first) return;
    const { userId } = first.deserializeAttachment() as Attachment;
    const sessionIds = [...new Set(sockets.map((socket) => this.sessionOf(socket)))];
    const live = await liveSessionsAmong(databaseOf(this.env.DB), userId, sessionIds, Date.now());
    let earliest = Infinity;
    // Only the sockets read above: one accepted meanwhile runs a check of its own.
    for (const socket of sockets) {
      const sessionEnds = live.get(this.sessionOf(socket));
      if (sessionEnds === undefined) {
        if (socket.readyState === WebSocket.OPEN) socket.close(CLOSE_SESSION_ENDED, SESSION_ENDED_REASON);
        continue;
      }
      socket.serializeAttachment({
        ...(socket.deserializeAttachment() as Attachment),
        userId,
        sessionEnds,
      } satisfies Attachment);
      earliest = Math.min(earliest, sessionEnds);
    }
    if (earliest !== Infinity) await this.ctx.storage.setAlarm(earliest + EXPIRY_MARGIN_MS);
  }

  private openSockets(): WebSocket[] {
    return this.ctx.getWebSockets().filter((socket) => socket.readyState === WebSocket.OPEN);
  }

  private sessionOf(socket: WebSocket): string {
    return this.ctx.getTags(socket)[0] ?? "";
  }

  /** The places held for tickets not yet used (the hub's own SQLite storage), those lapsed dropped. */
  private places(): SqlStorage {
    const { sql } = this.ctx.storage;
    sql.exec("CREATE TABLE IF NOT EXISTS places (ticket TEXT PRIMARY KEY, until INTEGER NOT NULL)");
    sql.exec("DELETE FROM places WHERE until <= ?", Date.now());
    return sql;
  }
}

/** Closes `socket` with `code` unless it is closed or closing already. */
function closeOpen(socket: WebSocket, code: number, reason: string): void {
  if (socket.readyState === WebSocket.OPEN) socket.close(code, reason);
}
