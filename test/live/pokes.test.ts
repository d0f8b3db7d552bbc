import * as v from "valibot";
import { describe, expect, it } from "vitest";
import {
  account,
  bearer,
  callLeavingWork,
  callWithEnv,
  logIn,
  Note,
  openLive,
  PRIVATE_NOTES,
  type LiveSocket,
} from "../helpers";

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
