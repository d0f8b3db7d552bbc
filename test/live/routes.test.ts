import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import { LiveMessage } from "../../src/live/messages";
import {
  CLOSE_MESSAGE_TOO_BIG,
  CLOSE_TOO_MANY_MESSAGES,
  LIVE_MESSAGE_MAX_BYTES,
  LIVE_MESSAGES_PER_MINUTE,
  MESSAGE_TOO_BIG_REASON,
  TOO_MANY_MESSAGES_REASON,
} from "../../src/live/protocol";
import { account, bearer, logIn, sessionIdOf } from "../support/accounts";
import { BASE, call, callWithEnv, jsonOf, tally, within } from "../support/app";
import { acceptLive, liveTicket, upgrade } from "../support/live";
import { error, PRIVATE_NOTES } from "../support/notes";

/** GET /changes/live (src/live/routes.ts): who may open the socket, and what it says first (src/live/hub.ts). */

/** A fresh account's session and a ticket of it. */
async function ticketed() {
  const { token } = await logIn(await account());
  return { token, ticket: await liveTicket(token) };
}

/** The 401 of a ticket that opens nothing: no socket came with it. */
async function expectRefused(response: Response) {
  expect(response.webSocket).toBeNull();
  expect(await jsonOf(response)).toEqual(error(401, LiveMessage.invalidTicket));
}

describe("GET /changes/live", () => {
  it("opens with 101, not cached, and the first frame is ready", async () => {
    const { ticket } = await ticketed();
    const response = await upgrade(ticket);
    expect(response.status).toBe(101);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const live = acceptLive(response);
    expect(await live.frame(0)).toBe('{"type":"ready"}');
    // Nothing else until something happens.
    expect(await live.frame(1, 200)).toBeUndefined();
    live.socket.close(1000);
  });

  it("answers 426 without Upgrade: websocket, whatever the ticket, and leaves a good ticket unused", async () => {
    const { ticket } = await ticketed();
    for (const query of [`?ticket=${ticket}`, "?ticket=nonsense", ""]) {
      const response = await callWithEnv(PRIVATE_NOTES, "GET", `/changes/live${query}`);
      expect(await jsonOf(response)).toEqual(error(426, LiveMessage.upgradeRequired));
      expect(response.headers.get("upgrade")).toBe("websocket");
    }
    expect((await upgrade(ticket, { Upgrade: "h2c" })).status).toBe(426);
    expect(await count(ticket)).toBe(1);
    expect((await upgrade(ticket)).status).toBe(101);
  });

  it("answers 401 before any upgrade for an unknown ticket, one not of ours, a used one and an expired one", async () => {
    const { token, ticket } = await ticketed();
    await expectRefused(await upgrade("A".repeat(22)));
    await expectRefused(await upgrade("not a ticket"));
    expect((await upgrade(ticket)).status).toBe(101);
    await expectRefused(await upgrade(ticket));

    const expired = await liveTicket(token);
    await env.DB.prepare("UPDATE live_tickets SET expires_at = ? WHERE token_hash = ?")
      .bind(Date.now() - 1, await sha256Hex(expired))
      .run();
    await expectRefused(await upgrade(expired));
  });

  it("answers 401 before any upgrade for a ticket whose session has ended, logged out or run out", async () => {
    const { token, ticket } = await ticketed();
    expect((await call("POST", "/auth/logout", undefined, bearer(token))).status).toBe(204);
    await expectRefused(await upgrade(ticket));

    const other = await ticketed();
    await env.DB.prepare("UPDATE sessions SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1, sessionIdOf(other.token))
      .run();
    await expectRefused(await upgrade(other.ticket));
  });

  it("opens exactly one socket for 20 concurrent upgrades with one ticket", async () => {
    const { ticket } = await ticketed();
    const answers = await Promise.all(Array.from({ length: 20 }, () => upgrade(ticket)));
    expect(tally(answers)).toEqual({ 101: 1, 401: 19 });
    const live = acceptLive(answers.find((answer) => answer.status === 101)!);
    expect(await live.frame(0)).toBe('{"type":"ready"}');
    live.socket.close(1000);
  });

  it("answers 403 to an Origin not in CORS_ORIGINS, leaving the ticket unused; a listed Origin, or none (a native app), opens", async () => {
    const origins = { CORS_ORIGINS: "https://app.example.com" };
    const { ticket } = await ticketed();
    for (const origin of ["https://evil.example.com", "null", "https://app.example.com.evil.example"]) {
      expect(await jsonOf(await upgrade(ticket, { Origin: origin }, origins))).toEqual(
        error(403, LiveMessage.originRefused),
      );
    }
    // No CORS_ORIGINS at all: no browser page may open one.
    expect((await upgrade(ticket, { Origin: "https://app.example.com" })).status).toBe(403);
    expect((await upgrade(ticket, { Origin: "https://app.example.com" }, origins)).status).toBe(101);
    expect((await upgrade((await ticketed()).ticket)).status).toBe(101);
  });

  it("answers 403 to an empty Origin, as to any browser's origin not listed: only a request without the header is a native app's (I3)", async () => {
    const { ticket } = await ticketed();
    for (const origins of [{}, { CORS_ORIGINS: "https://app.example.com" }]) {
      const response = await upgrade(ticket, { Origin: "" }, origins);
      expect(response.webSocket).toBeNull();
      expect(await jsonOf(response)).toEqual(error(403, LiveMessage.originRefused));
    }
    // The ticket is still good.
    expect((await upgrade(ticket)).status).toBe(101);
  });

  it("answers 400 without a ticket, and 405 to other methods", async () => {
    expect(
      await jsonOf(await callWithEnv(PRIVATE_NOTES, "GET", "/changes/live", undefined, { Upgrade: "websocket" })),
    ).toEqual(error(400, LiveMessage.ticketRequired));
    const post = await callWithEnv(PRIVATE_NOTES, "POST", "/changes/live", undefined, { Upgrade: "websocket" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET");
    expect((await callWithEnv(PRIVATE_NOTES, "GET", "/changes/live-ticket")).headers.get("allow")).toBe("POST");
  });

  it("answers 404 with public notes (NOTES_AUTH=off), before anything else", async () => {
    const response = await exports.default.fetch(
      new Request(`${BASE}/changes/live?ticket=${"A".repeat(22)}`, { headers: { Upgrade: "websocket" } }),
    );
    expect(response.webSocket).toBeNull();
    expect(await jsonOf(response)).toEqual(error(404, LiveMessage.notAvailable));
    expect(await jsonOf(await call("GET", "/changes/live"))).toEqual(error(404, LiveMessage.notAvailable));
  });

  it("closes a socket that sends a message over LIVE_MESSAGE_MAX_BYTES with 1009 (I3)", async () => {
    const { ticket } = await ticketed();
    const live = acceptLive(await upgrade(ticket));
    expect(await live.frame(0)).toBe('{"type":"ready"}');
    live.socket.send("x".repeat(LIVE_MESSAGE_MAX_BYTES));
    expect(await within(live.closed, 300)).toBe("timeout");
    live.socket.send("é".repeat(LIVE_MESSAGE_MAX_BYTES / 2 + 1));
    expect(await within(live.closed, 2_000)).toEqual({
      code: CLOSE_MESSAGE_TOO_BIG,
      reason: MESSAGE_TOO_BIG_REASON,
      at: expect.any(Number),
    });
  });

  it("closes a socket past LIVE_MESSAGES_PER_MINUTE messages that wake the hub with 1008; pings, answered by the runtime, do not count (I3)", async () => {
    const { ticket } = await ticketed();
    const live = acceptLive(await upgrade(ticket));
    expect(await live.frame(0)).toBe('{"type":"ready"}');
    for (let i = 0; i < 3 * LIVE_MESSAGES_PER_MINUTE; i++) live.socket.send('{"type":"ping"}');
    for (let i = 0; i < LIVE_MESSAGES_PER_MINUTE; i++) live.socket.send(`hello ${i}`);
    expect(await live.frame(3 * LIVE_MESSAGES_PER_MINUTE)).toBe('{"type":"pong"}');
    expect(await within(live.closed, 300)).toBe("timeout");
    live.socket.send("one too many");
    expect(await within(live.closed, 2_000)).toEqual({
      code: CLOSE_TOO_MANY_MESSAGES,
      reason: TOO_MANY_MESSAGES_REASON,
      at: expect.any(Number),
    });
  });

  it("answers pong to ping (the runtime's own answer), and ignores anything else", async () => {
    const { ticket } = await ticketed();
    const live = acceptLive(await upgrade(ticket));
    expect(await live.frame(0)).toBe('{"type":"ready"}');
    live.socket.send('{"type":"ping"}');
    expect(await live.frame(1)).toBe('{"type":"pong"}');
    live.socket.send("hello");
    live.socket.send('{"type": "ping"}');
    live.socket.send('{"type":"ping"}');
    expect(await live.frame(2)).toBe('{"type":"pong"}');
    expect(live.frames).toHaveLength(3);
    expect(await within(live.closed, 100)).toBe("timeout");
    live.socket.close(1000);
  });
});

describe("GET /changes", () => {
  it("still needs its Bearer token: the live routes beside it change nothing", async () => {
    expect(await jsonOf(await callWithEnv(PRIVATE_NOTES, "GET", "/changes"))).toEqual(error(401, "Unauthorized"));
  });
});

/** How many stored tickets have this ticket's hash. */
async function count(ticket: string): Promise<number> {
  return (await env.DB.prepare("SELECT count(*) AS n FROM live_tickets WHERE token_hash = ?")
    .bind(await sha256Hex(ticket))
    .first<number>("n"))!;
}
