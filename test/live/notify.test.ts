import * as v from "valibot";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { account, bearer, logIn } from "../support/accounts";
import { callLeavingWork, callWithEnv } from "../support/app";
import { openLive, type LiveSocket } from "../support/live";
import { Note, PRIVATE_NOTES } from "../support/notes";

/**
 * "Pull now" after every write to an account's notes (src/live/notify.ts, handed to src/notes/area.ts): every
 * socket of the account hears of it within 2 s, with the write's bookmark and nothing else, whichever device
 * wrote; nobody else hears anything.
 */

/** A device (its own session) of `email`, with NOTES_AUTH=required; its writes answer before the pokes go out. */
async function device(email: string) {
  const { token } = await logIn(email);
  const send = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const { response } = await callLeavingWork(PRIVATE_NOTES, method, path, body, { ...bearer(token), ...headers });
    return { response, answeredAt: Date.now(), bookmark: response.headers.get("x-d1-bookmark")! };
  };
  return { token, send };
}

/** The one frame a write's poke is: its type and its bookmark. */
const changed = (bookmark: string) => JSON.stringify({ type: "changed", bookmark });

/** Waits for frame `index` of `live` and how long after `since` it came. */
async function frameAfter(live: LiveSocket, index: number, since: number) {
  const frame = await live.frame(index);
  return { frame, ms: Date.now() - since };
}

describe("live updates after a write", () => {
  it("tell every socket of the account within 2 s of a create, an update and a delete from another device, with the write's bookmark", async () => {
    const email = await account();
    const [phone, laptop] = [await device(email), await device(email)];
    const sockets = [await openLive(laptop.token), await openLive(laptop.token), await openLive(phone.token)];

    /** Each write's frame on every socket, within 2 s of its answer. */
    const told = async (index: number, write: Awaited<ReturnType<typeof phone.send>>) => {
      for (const live of sockets) {
        const { frame, ms } = await frameAfter(live, index, write.answeredAt);
        expect(frame).toBe(changed(write.bookmark));
        expect(ms).toBeLessThan(2_000);
      }
    };
    const created = await phone.send("POST", "/notes", { title: "From the phone", content: "secret content" });
    expect(created.response.status).toBe(201);
    await told(1, created);
    const { id } = v.parse(Note, await created.response.json());
    const updated = await phone.send("PATCH", `/notes/${id}`, { content: "edited" });
    expect(updated.response.status).toBe(200);
    await told(2, updated);
    const deleted = await phone.send("DELETE", `/notes/${id}`);
    expect(deleted.response.status).toBe(204);
    await told(3, deleted);
    // Nothing but the type and the bookmark: no title, content or id.
    for (const frame of sockets[0]!.frames.slice(1))
      expect(Object.keys(JSON.parse(frame) as object)).toEqual(["type", "bookmark"]);
    for (const live of sockets) live.socket.close(1000);
  });

  it("give a bookmark that makes the pull see the write", async () => {
    const email = await account();
    const [phone, laptop] = [await device(email), await device(email)];
    const live = await openLive(laptop.token);
    const created = await phone.send("POST", "/notes", { title: "Seen", content: "c" });
    const { bookmark } = JSON.parse((await live.frame(1))!) as { bookmark: string };
    const pulled = await callWithEnv(PRIVATE_NOTES, "GET", "/changes", undefined, {
      ...bearer(laptop.token),
      "X-D1-Bookmark": bookmark,
    });
    const page = (await pulled.json()) as { changes: Array<{ note: unknown }> };
    expect(page.changes.map((change) => change.note)).toEqual([await created.response.json()]);
    live.socket.close(1000);
  });

  it("tell nothing of another account's writes", async () => {
    const mine = await device(await account());
    const theirs = await device(await account());
    const live = await openLive(mine.token);
    // Their write's poke is delivered (waited for) before mine is made: had it come here, it would come first.
    expect(
      (await callWithEnv(PRIVATE_NOTES, "POST", "/notes", { title: "Theirs", content: "c" }, bearer(theirs.token)))
        .status,
    ).toBe(201);
    const own = await mine.send("POST", "/notes", { title: "Mine", content: "c" });
    expect(await live.frame(1)).toBe(changed(own.bookmark));
    expect(await live.frame(2, 300)).toBeUndefined();
    live.socket.close(1000);
  });

  it("tell of an idempotent create once: a replay writes nothing and tells nothing", async () => {
    const email = await account();
    const [phone, laptop] = [await device(email), await device(email)];
    const live = await openLive(laptop.token);
    const key = { "Idempotency-Key": crypto.randomUUID() };
    const first = await phone.send("POST", "/notes", { title: "Once", content: "c" }, key);
    expect(first.response.status).toBe(201);
    expect(await live.frame(1)).toBe(changed(first.bookmark));
    const replay = await phone.send("POST", "/notes", { title: "Once", content: "c" }, key);
    expect(replay.response.headers.get("idempotent-replayed")).toBe("true");
    const next = await phone.send("POST", "/notes", { title: "Next", content: "c" });
    expect(await live.frame(2)).toBe(changed(next.bookmark));
    expect(live.frames).toEqual(['{"type":"ready"}', changed(first.bookmark), changed(next.bookmark)]);
    live.socket.close(1000);
  });

  it("tell nothing of a write that did not happen: a note not found, a stale If-Match, an empty change", async () => {
    const email = await account();
    const [phone, laptop] = [await device(email), await device(email)];
    const created = await phone.send("POST", "/notes", { title: "Kept", content: "c" });
    const { id } = v.parse(Note, await created.response.json());
    const live = await openLive(laptop.token);
    expect((await phone.send("PATCH", "/notes/999999999", { content: "x" })).response.status).toBe(404);
    expect((await phone.send("DELETE", "/notes/999999999")).response.status).toBe(404);
    expect((await phone.send("PATCH", `/notes/${id}`, { content: "x" }, { "If-Match": '"999"' })).response.status).toBe(
      412,
    );
    expect((await phone.send("DELETE", `/notes/${id}`, undefined, { "If-Match": '"999"' })).response.status).toBe(412);
    expect((await phone.send("PATCH", `/notes/${id}`, {})).response.status).toBe(200);
    const last = await phone.send("DELETE", `/notes/${id}`);
    expect(await live.frame(1)).toBe(changed(last.bookmark));
    expect(live.frames).toHaveLength(2);
    live.socket.close(1000);
  });
});

/** The worker's hub namespace (the real Durable Objects), counting the hubs a request asks for. */
function countingHubs() {
  const asked: string[] = [];
  const hubs = new Proxy(env.LIVE_HUB, {
    get(target, property) {
      if (property === "get")
        return (id: DurableObjectId) => {
          asked.push(id.toString());
          return target.get(id);
        };
      const value: unknown = Reflect.get(target, property);
      if (typeof value !== "function") return value;
      const bound: unknown = value.bind(target);
      return bound;
    },
  });
  return { asked, bindings: { ...PRIVATE_NOTES, LIVE_HUB: hubs } };
}

/** The account's mark of being watched (src/live/watchers.ts): when its last ticket was handed out, if any. */
async function watchedSince(email: string): Promise<number | null> {
  return env.DB.prepare("SELECT since FROM live_watchers WHERE user_id = (SELECT id FROM users WHERE email = ?)")
    .bind(email)
    .first<number>("since");
}

/** Moves the account's mark back by a minute: older than any ticket still usable. */
async function ageMark(email: string) {
  await env.DB.prepare(
    "UPDATE live_watchers SET since = since - 60000 WHERE user_id = (SELECT id FROM users WHERE email = ?)",
  )
    .bind(email)
    .run();
}

/** Waits until `check` holds, for at most 2 s. */
async function eventually(check: () => Promise<boolean>) {
  const deadline = Date.now() + 2_000;
  while (!(await check()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return check();
}

describe("live updates cost nothing to an account without sockets", () => {
  it("a create, an update and a delete of an account that never opened a socket ask no hub", async () => {
    const { token } = await logIn(await account());
    const hubs = countingHubs();
    const send = (method: string, path: string, body?: unknown) =>
      callWithEnv(hubs.bindings, method, path, body, bearer(token));
    const created = await send("POST", "/notes", { title: "Quiet", content: "c" });
    expect(created.status).toBe(201);
    const { id } = v.parse(Note, await created.json());
    expect((await send("PATCH", `/notes/${id}`, { content: "d" })).status).toBe(200);
    expect((await send("DELETE", `/notes/${id}`)).status).toBe(204);
    expect(hubs.asked).toEqual([]);
  });

  it("a ticket marks the account before its socket can open; once the last socket has closed, writes stop asking", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const live = await openLive(token);
    expect(await watchedSince(email)).toEqual(expect.any(Number));
    // A mark as old as no ticket still usable could be: the hub removes it when its last socket closes.
    await ageMark(email);
    live.socket.close(1000);
    expect(await eventually(async () => (await watchedSince(email)) === null)).toBe(true);

    const hubs = countingHubs();
    const quiet = await callWithEnv(hubs.bindings, "POST", "/notes", { title: "Nobody", content: "c" }, bearer(token));
    expect(quiet.status).toBe(201);
    expect(hubs.asked).toEqual([]);

    // A new ticket marks it again, and its socket hears the next write.
    const again = await openLive(token);
    const heard = await callWithEnv(PRIVATE_NOTES, "POST", "/notes", { title: "Heard", content: "c" }, bearer(token));
    expect(await again.frame(1)).toBe(changed(heard.headers.get("x-d1-bookmark")!));
    again.socket.close(1000);
  });

  it("a mark left behind costs one poke: the hub that finds no socket removes it", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const live = await openLive(token);
    live.socket.close(1000);
    await live.closed;
    // The mark is newer than a ticket's life, so the close kept it (a ticket handed out meanwhile needs it).
    expect(await watchedSince(email)).toEqual(expect.any(Number));
    await ageMark(email);

    const hubs = countingHubs();
    const write = () => callWithEnv(hubs.bindings, "POST", "/notes", { title: "t", content: "c" }, bearer(token));
    expect((await write()).status).toBe(201);
    expect(hubs.asked).toHaveLength(1);
    expect(await eventually(async () => (await watchedSince(email)) === null)).toBe(true);
    expect((await write()).status).toBe(201);
    expect(hubs.asked).toHaveLength(1);
  });

  it("a ticket handed out while the last socket closes keeps the account marked: its socket hears the next write, every time", async () => {
    const email = await account();
    const { token } = await logIn(email);
    let live = await openLive(token);
    for (let round = 0; round < 5; round++) {
      // The mark is old, so the closing hub would remove it: the new ticket's mark is what must survive.
      await ageMark(email);
      const [next] = await Promise.all([openLive(token), Promise.resolve(live.socket.close(1000))]);
      await live.closed;
      const write = await callWithEnv(PRIVATE_NOTES, "POST", "/notes", { title: "t", content: "c" }, bearer(token));
      expect(await next.frame(1)).toBe(changed(write.headers.get("x-d1-bookmark")!));
      live = next;
    }
    live.socket.close(1000);
  });
});
