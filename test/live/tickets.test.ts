import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import { LiveMessage } from "../../src/live/messages";
import { hubOf } from "../../src/live/notify";
import { NoteMessage } from "../../src/notes/messages";
import { account, bearer, logIn, sessionIdOf, storedUser } from "../support/accounts";
import { call, callWithEnv, fireCron, jsonOf, JSON_TYPE, tally, within } from "../support/app";
import { acceptLive, liveTicket, openLive, upgrade } from "../support/live";
import { error, PRIVATE_NOTES } from "../support/notes";

/**
 * POST /changes/live-ticket (src/live/routes.ts, src/live/tickets.ts) and the socket cap held by the hub
 * (src/live/hub.ts).
 */

/** LIVE_SOCKETS_PER_ACCOUNT as wrangler.toml sets it. */
const CAP = 20;

const askTicket = (token: string) =>
  callWithEnv(PRIVATE_NOTES, "POST", "/changes/live-ticket", undefined, bearer(token));

interface TicketRow {
  token_hash: string;
  session_id: string;
  user_id: number;
  expires_at: number;
}
const ticketRows = (userId: number) =>
  env.DB.prepare("SELECT * FROM live_tickets WHERE user_id = ?").bind(userId).all<TicketRow>();

describe("POST /changes/live-ticket", () => {
  it("answers 201 with a ticket good for 30 seconds, not to be cached, stored only as its SHA-256 and bound to the session", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const before = Date.now();
    const response = await askTicket(token);
    expect(response.status).toBe(201);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const body = (await response.json()) as { ticket: string; expires_in: number };
    expect(body).toEqual({ ticket: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/), expires_in: 30 });
    expect(body.expires_in).toBeLessThanOrEqual(60);

    const userId = (await storedUser(email))!.id;
    const { results } = await ticketRows(userId);
    expect(results).toEqual([
      {
        token_hash: await sha256Hex(body.ticket),
        session_id: sessionIdOf(token),
        user_id: userId,
        expires_at: expect.any(Number),
      },
    ]);
    expect(results[0]!.expires_at).toBeGreaterThanOrEqual(before + 30_000);
    expect(results[0]!.expires_at).toBeLessThanOrEqual(Date.now() + 30_000);
  });

  it("answers 401 without a token, with a bad one, and for a session that has ended, storing nothing", async () => {
    const email = await account();
    const { token } = await logIn(email);
    expect((await call("POST", "/auth/logout", undefined, bearer(token))).status).toBe(204);
    for (const headers of [{}, bearer("not-a-token"), bearer(token)]) {
      const response = await callWithEnv(PRIVATE_NOTES, "POST", "/changes/live-ticket", undefined, headers);
      expect(await jsonOf(response)).toEqual(error(401, NoteMessage.unauthorized));
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
    }
    expect((await ticketRows((await storedUser(email))!.id)).results).toEqual([]);
  });

  it("answers 404 with public notes (NOTES_AUTH=off), whoever asks", async () => {
    const { token } = await logIn(await account());
    for (const headers of [{}, bearer(token)]) {
      expect(await jsonOf(await call("POST", "/changes/live-ticket", undefined, headers))).toEqual(
        error(404, LiveMessage.notAvailable),
      );
    }
  });

  it(`answers 429 once the account has ${CAP} sockets open; another account is not counted, and a socket closed frees its place`, async () => {
    const { token } = await logIn(await account());
    const sockets = await Promise.all(Array.from({ length: CAP }, () => openLive(token)));
    const refused = await askTicket(token);
    expect(await jsonOf(refused)).toEqual(error(429, LiveMessage.tooManySockets));
    expect(refused.headers.get("cache-control")).toBe("no-store");

    const other = await logIn(await account());
    expect((await askTicket(other.token)).status).toBe(201);

    sockets[0]!.socket.close(1000);
    expect(await within(sockets[0]!.closed, 2_000)).not.toBe("timeout");
    const deadline = Date.now() + 2_000;
    let again = await askTicket(token);
    while (again.status === 429 && Date.now() < deadline) again = await askTicket(token);
    expect(again.status).toBe(201);
    for (const live of sockets) live.socket.close(1000);
  });

  it(`holds the cap under a burst: of 25 tickets asked at once, exactly ${CAP} are handed out, and each opens a socket`, async () => {
    const { token } = await logIn(await account());
    const answers = await Promise.all(Array.from({ length: 25 }, () => askTicket(token)));
    expect(tally(answers)).toEqual({ 201: CAP, 429: 25 - CAP });
    const tickets = await Promise.all(
      answers
        .filter((answer) => answer.status === 201)
        .map(async (answer) => ((await answer.json()) as { ticket: string }).ticket),
    );
    const sockets = (await Promise.all(tickets.map((ticket) => upgrade(ticket)))).map(acceptLive);
    expect(await Promise.all(sockets.map((live) => live.frame(0)))).toEqual(Array(CAP).fill('{"type":"ready"}'));
    expect((await askTicket(token)).status).toBe(429);
    for (const live of sockets) live.socket.close(1000);
  });

  it("caps at LIVE_SOCKETS_PER_ACCOUNT when set, and answers 500 naming the setting when it is not a number from 1 to 10,000", async () => {
    const { token } = await logIn(await account());
    const two = { LIVE_SOCKETS_PER_ACCOUNT: "2" };
    const tickets = [await liveTicket(token, two), await liveTicket(token, two)];
    expect(
      await jsonOf(
        await callWithEnv({ ...PRIVATE_NOTES, ...two }, "POST", "/changes/live-ticket", undefined, bearer(token)),
      ),
    ).toEqual(error(429, LiveMessage.tooManySockets));
    for (const ticket of tickets) expect((await upgrade(ticket, {}, two)).status).toBe(101);
    for (const bad of ["0", "10001", "many"]) {
      const response = await callWithEnv(
        { ...PRIVATE_NOTES, LIVE_SOCKETS_PER_ACCOUNT: bad },
        "POST",
        "/changes/live-ticket",
        undefined,
        bearer(token),
      );
      expect(await jsonOf(response)).toEqual(error(500, NoteMessage.internalError));
    }
  });

  it("keeps the place of a ticket not used until the ticket expires", async () => {
    const email = await account();
    const { token } = await logIn(email);
    for (let i = 0; i < CAP; i++) await liveTicket(token);
    expect((await askTicket(token)).status).toBe(429);
    // The places lapse with their tickets (TICKET_TTL_MS): moved back in the hub's own storage, as time would.
    const userId = (await storedUser(email))!.id;
    await runInDurableObject(
      hubOf(env, userId),
      (_hub, state) => void state.storage.sql.exec("UPDATE places SET until = ?", Date.now() - 1),
    );
    expect((await askTicket(token)).status).toBe(201);
  });
});

describe("the hourly clean-up", () => {
  it("deletes expired tickets, and keeps the others", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const [expired, live] = [await liveTicket(token), await liveTicket(token)];
    await env.DB.prepare("UPDATE live_tickets SET expires_at = ? WHERE token_hash = ?")
      .bind(Date.now() - 1, await sha256Hex(expired))
      .run();
    await fireCron();
    const { results } = await ticketRows((await storedUser(email))!.id);
    expect(results.map((row) => row.token_hash)).toEqual([await sha256Hex(live)]);
  });
});
