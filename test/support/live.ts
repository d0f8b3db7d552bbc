import { expect } from "vitest";
import type { Bindings } from "../../src/types";
import { bearer } from "./accounts";
import { callWithEnv } from "./app";
import { PRIVATE_NOTES } from "./notes";

/** A ticket for the live-updates socket, asked for with the access token `token` (expecting 201). */
export async function liveTicket(token: string, overrides: Partial<Bindings> = {}): Promise<string> {
  const response = await callWithEnv(
    { ...PRIVATE_NOTES, ...overrides },
    "POST",
    "/changes/live-ticket",
    undefined,
    bearer(token),
  );
  if (response.status !== 201)
    throw new Error(`live-ticket: expected 201, got ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { ticket: string }).ticket;
}

/**
 * GET /changes/live with the ticket, as a WebSocket client sends it (Upgrade: websocket, unless `headers` says
 * otherwise).
 */
export function upgrade(
  ticket: string,
  headers: Record<string, string> = {},
  overrides: Partial<Bindings> = {},
): Promise<Response> {
  return callWithEnv(
    { ...PRIVATE_NOTES, ...overrides },
    "GET",
    `/changes/live?ticket=${encodeURIComponent(ticket)}`,
    undefined,
    { Upgrade: "websocket", ...headers },
  );
}

/** A live-updates socket as its client sees it: the frames so far, and how it closed. */
export interface LiveSocket {
  socket: WebSocket;
  /** Every text frame received so far, in order. */
  frames: string[];
  /** The close code and reason once the socket has closed, and when (Date.now()). */
  closed: Promise<{ code: number; reason: string; at: number }>;
  /** Waits up to `ms` for frame number `index` (0 is `ready`): the frame, or undefined if none came. */
  frame(index: number, ms?: number): Promise<string | undefined>;
}

/** Accepts the socket of a 101 and records what it receives. */
export function acceptLive(response: Response): LiveSocket {
  const socket = response.webSocket;
  if (response.status !== 101 || !socket) throw new Error(`expected 101 with a WebSocket, got ${response.status}`);
  const frames: string[] = [];
  const closed = new Promise<{ code: number; reason: string; at: number }>((resolve) => {
    socket.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason, at: Date.now() }));
  });
  socket.addEventListener("message", (event) => {
    frames.push(typeof event.data === "string" ? event.data : "(binary)");
  });
  socket.accept();
  const frame = async (index: number, ms = 2_000) => {
    const deadline = Date.now() + ms;
    while (frames.length <= index && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    return frames[index];
  };
  return { socket, frames, closed, frame };
}

/** Opens a live-updates socket for the session of `token` and waits for its `ready`. */
export async function openLive(token: string): Promise<LiveSocket> {
  const live = acceptLive(await upgrade(await liveTicket(token)));
  expect(await live.frame(0)).toBe('{"type":"ready"}');
  return live;
}
