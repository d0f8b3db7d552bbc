import { env } from "cloudflare:workers";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { caughtUp, cursorOf, MAX_CHANGES_PAGE } from "../../src/notes/changes";
import { NoteMessage } from "../../src/notes/messages";
import { DAY } from "../../src/lib/units";
import { logIn, storedUser, verifiedAccount } from "../support/accounts";
import { call, callWithEnv, fireCron, jsonOf, PASSWORD } from "../support/app";
import { error, Note } from "../support/notes";

/**
 * The changes feed (src/notes/changes.ts), each test with NOTES_AUTH=required and users of its own, so the
 * feed holds exactly what the test wrote.
 */

const Change = v.variant("type", [
  v.object({ type: v.literal("upsert"), note: Note, etag: v.string() }),
  v.object({ type: v.literal("delete"), id: v.number() }),
]);
const Page = v.object({ changes: v.array(Change), cursor: v.string(), has_more: v.boolean() });
type Page = v.InferOutput<typeof Page>;
type NoteJson = v.InferOutput<typeof Note>;

/** A device of a fresh user (or of `email`): its own session, talking to the app with NOTES_AUTH=required. */
async function device(email?: string) {
  const address = email ?? (await verifiedAccount());
  const { token } = await logIn(address);
  const send = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    callWithEnv({ NOTES_AUTH: "required" }, method, path, body, { Authorization: `Bearer ${token}`, ...headers });
  const feed = async (query = ""): Promise<Page> => {
    const response = await send("GET", `/changes${query}`);
    expect(response.status).toBe(200);
    return v.parse(Page, await response.json());
  };
  const create = async (title: string, content = "c"): Promise<NoteJson> =>
    v.parse(Note, await (await send("POST", "/notes", { title, content })).json());
  return { email: address, send, feed, create };
}

/** What a client does with the feed: apply each change to its copy, page after page, from `cursor`. */
async function syncFrom(
  feed: (query: string) => Promise<Page>,
  copy: Map<number, NoteJson>,
  cursor: string | undefined,
  limit?: number,
) {
  let next = cursor;
  for (;;) {
    const query = new URLSearchParams({
      ...(next === undefined ? {} : { cursor: next }),
      ...(limit ? { limit: String(limit) } : {}),
    }).toString();
    const page = await feed(query ? `?${query}` : "");
    for (const change of page.changes) {
      if (change.type === "upsert") copy.set(change.note.id, change.note);
      else copy.delete(change.id);
    }
    next = page.cursor;
    if (!page.has_more) return next;
  }
}

/** The notes the server holds for this device's user, by id. */
async function serverNotes(send: Awaited<ReturnType<typeof device>>["send"]): Promise<Map<number, NoteJson>> {
  const list = v.parse(v.array(Note), await (await send("GET", "/notes")).json());
  return new Map(list.map((note) => [note.id, note]));
}

describe("GET /changes", () => {
  it("starts empty for a new user, with a cursor to come back with", async () => {
    const { feed } = await device();
    expect(await feed()).toEqual({ changes: [], cursor: cursorOf(caughtUp(0)), has_more: false });
  });

  it("answers every live note from the start, each once in its latest state, and deletions, in commit order", async () => {
    const { send, feed, create } = await device();
    const a = await create("a");
    const b = await create("b");
    const c = await create("c");
    const edited = await send("PATCH", `/notes/${a.id}`, { content: "edited" });
    await send("DELETE", `/notes/${b.id}`);

    const page = await feed();
    expect(page.has_more).toBe(false);
    expect(page.changes).toEqual([
      { type: "upsert", note: c, etag: '"3"' },
      { type: "upsert", note: { ...a, content: "edited" }, etag: edited.headers.get("etag") },
      { type: "delete", id: b.id },
    ]);
    // Nothing new since: the same cursor back, nothing in the page.
    expect(await feed(`?cursor=${page.cursor}`)).toEqual({ changes: [], cursor: page.cursor, has_more: false });
    // Later changes only.
    const d = await create("d");
    expect((await feed(`?cursor=${page.cursor}`)).changes).toEqual([{ type: "upsert", note: d, etag: '"6"' }]);
  });

  it("pages with limit and has_more, and never repeats or skips a change across pages", async () => {
    const { feed, create } = await device();
    const notes = [];
    for (let i = 0; i < 5; i++) notes.push(await create(`n${i}`));
    const first = await feed("?limit=2");
    expect(first.changes.map((change) => change.type === "upsert" && change.note.id)).toEqual([
      notes[0]!.id,
      notes[1]!.id,
    ]);
    expect(first.has_more).toBe(true);
    const second = await feed(`?limit=2&cursor=${first.cursor}`);
    expect(second.changes.map((change) => change.type === "upsert" && change.note.id)).toEqual([
      notes[2]!.id,
      notes[3]!.id,
    ]);
    const third = await feed(`?limit=2&cursor=${second.cursor}`);
    expect(third.changes).toHaveLength(1);
    expect(third.has_more).toBe(false);
  });

  it("cuts a page of large notes by bytes, at least one note a page", async () => {
    const { feed, create } = await device();
    const big = "x".repeat(700 * 1024);
    for (let i = 0; i < 4; i++) await create(`big ${i}`, big);
    const sizes: number[] = [];
    await syncFrom(
      async (query) => {
        const page = await feed(query);
        sizes.push(page.changes.length);
        return page;
      },
      new Map(),
      undefined,
    );
    expect(sizes).toEqual([2, 2]);
  });

  it("answers 400 for a malformed cursor or limit, and 410 for a cursor ahead of the feed", async () => {
    const { send } = await device();
    for (const cursor of ["nonsense!", "djE6LTE", cursorOf(caughtUp(1)).slice(0, -1), "v1:1:1"]) {
      expect(await jsonOf(await send("GET", `/changes?cursor=${encodeURIComponent(cursor)}`))).toEqual(
        error(400, NoteMessage.invalidCursor),
      );
    }
    for (const limit of ["0", `${MAX_CHANGES_PAGE + 1}`, "x"]) {
      expect(await jsonOf(await send("GET", `/changes?limit=${limit}`))).toEqual(
        error(400, `limit must be an integer from 1 to ${MAX_CHANGES_PAGE}`),
      );
    }
    expect(await jsonOf(await send("GET", `/changes?cursor=${cursorOf(caughtUp(1_000_000))}`))).toEqual(
      error(410, NoteMessage.cursorExpired),
    );
  });

  it("keeps deletions 30 days: an older cursor is a 410, and a sync without a cursor starts again", async () => {
    const { send, feed, create, email } = await device();
    const gone = await create("gone");
    const kept = await create("kept");
    const before = (await feed()).cursor;
    const { cursor: old } = await feed("?limit=1");
    await send("DELETE", `/notes/${gone.id}`);
    const owner = (await storedUser(email))!.id;
    await env.DB.prepare("UPDATE note_tombstones SET deleted_at = ? WHERE owner = ?")
      .bind(Date.now() - 31 * DAY, owner)
      .run();
    await fireCron();

    expect(await jsonOf(await send("GET", `/changes?cursor=${old}`))).toEqual(error(410, NoteMessage.cursorExpired));
    expect(await jsonOf(await send("GET", `/changes?cursor=${before}`))).toEqual(error(410, NoteMessage.cursorExpired));
    const again = await feed();
    expect(again.changes).toEqual([{ type: "upsert", note: kept, etag: '"2"' }]);
    expect((await feed(`?cursor=${again.cursor}`)).changes).toEqual([]);
  });

  it("answers 401 without a token when notes are private, and shows a user only their own changes", async () => {
    expect(await jsonOf(await callWithEnv({ NOTES_AUTH: "required" }, "GET", "/changes"))).toEqual(
      error(401, "Unauthorized"),
    );
    const mine = await device();
    const theirs = await device();
    await theirs.create("theirs");
    expect((await mine.feed()).changes).toEqual([]);
  });

  it("forgets a deleted account's clock and tombstones with it", async () => {
    const { send, create, email } = await device();
    const note = await create("n");
    await send("DELETE", `/notes/${note.id}`);
    const owner = (await storedUser(email))!.id;
    const { token } = await logIn(email);
    expect(
      (await call("DELETE", "/auth/account", { password: PASSWORD }, { Authorization: `Bearer ${token}` })).status,
    ).toBe(204);
    const left = await env.DB.prepare(
      "SELECT (SELECT count(*) FROM note_tombstones WHERE owner = ?1) + (SELECT count(*) FROM note_clocks WHERE owner = ?1) AS n",
    )
      .bind(owner)
      .first("n");
    expect(left).toBe(0);
  });

  it("lets a sync from scratch page through notes older than the deletions pruned", async () => {
    const { send, feed, create, email } = await device();
    await create("one");
    await create("two");
    const gone = await create("gone");
    await send("DELETE", `/notes/${gone.id}`);
    await env.DB.prepare("UPDATE note_tombstones SET deleted_at = ? WHERE owner = ?")
      .bind(Date.now() - 31 * DAY, (await storedUser(email))!.id)
      .run();
    await fireCron();
    const copy = new Map<number, NoteJson>();
    await syncFrom(feed, copy, undefined, 1);
    expect([...copy.values()].map((note) => note.title)).toEqual(["one", "two"]);
  });
});

describe("syncing two devices through the feed", () => {
  it("brings an offline device to exactly the other's notes with the feed alone", async () => {
    const phone = await device();
    const laptop = await device(phone.email);
    const laptopCopy = new Map<number, NoteJson>();
    let laptopCursor = await syncFrom(laptop.feed, laptopCopy, undefined);

    // The laptop goes offline; the phone creates, edits and deletes.
    const kept = await phone.create("kept");
    const edited = await phone.create("to edit");
    const removed = await phone.create("to remove");
    await phone.send("PATCH", `/notes/${edited.id}`, { title: "edited", content: "new" });
    await phone.send("DELETE", `/notes/${removed.id}`);
    await phone.send("PATCH", `/notes/${kept.id}`, { content: "twice" });

    laptopCursor = await syncFrom(laptop.feed, laptopCopy, laptopCursor, 2);
    expect(laptopCopy).toEqual(await serverNotes(phone.send));
    expect([...laptopCopy.values()].map((note) => note.title).sort()).toEqual(["edited", "kept"]);
    expect((await laptop.feed(`?cursor=${laptopCursor}`)).changes).toEqual([]);
  });

  it("sees every change exactly once, in order, while 30 writes race a reader", async () => {
    const writer = await device();
    const reader = await device(writer.email);
    const seeds = await Promise.all(Array.from({ length: 10 }, (_, i) => writer.create(`seed ${i}`)));
    const copy = new Map<number, NoteJson>();
    const seen: number[] = [];
    let cursor: string | undefined;
    const pull = async () => {
      cursor = await syncFrom(
        async (query) => {
          const page = await reader.feed(query);
          for (const change of page.changes) if (change.type === "upsert") seen.push(Number(change.etag.slice(1, -1)));
          return page;
        },
        copy,
        cursor,
        3,
      );
    };
    const writes = [
      ...Array.from({ length: 10 }, (_, i) => () => writer.create(`new ${i}`)),
      ...seeds
        .slice(0, 10)
        .map(
          (note, i) => () =>
            i % 2
              ? writer.send("DELETE", `/notes/${note.id}`)
              : writer.send("PATCH", `/notes/${note.id}`, { content: `v${i}` }),
        ),
      ...Array.from({ length: 10 }, (_, i) => () => writer.create(`more ${i}`)),
    ];
    // One reader pulling again and again while the writes run, then once more after them.
    const reading = (async () => {
      for (let i = 0; i < 6; i++) await pull();
    })();
    await Promise.all([...writes.map((write) => write()), reading]);
    await pull();

    // The feed hands out changes in sequence order across every page and pass: no change came twice.
    expect(copy).toEqual(await serverNotes(writer.send));
    expect(copy.size).toBe(10 + 5 + 10);
    expect(seen.every((revision, i) => i === 0 || revision > seen[i - 1]!)).toBe(true);
  });
});

describe("GET /changes with public notes (NOTES_AUTH=off)", () => {
  it("feeds the notes written while notes are public, with their deletions, and none a user wrote", async () => {
    const feed = async (query: string): Promise<Page> => {
      const response = await call("GET", `/changes${query}`);
      expect(response.status).toBe(200);
      return v.parse(Page, await response.json());
    };
    const clock = await env.DB.prepare(
      "SELECT coalesce((SELECT seq FROM note_clocks WHERE owner = 0), 0) AS seq",
    ).first<number>("seq");
    const copy = new Map<number, NoteJson>();
    const user = await device();
    const users = await user.create("a user's");
    const kept = v.parse(Note, await (await call("POST", "/notes", { title: "public kept", content: "c" })).json());
    const gone = v.parse(Note, await (await call("POST", "/notes", { title: "public gone", content: "c" })).json());

    const cursor = await syncFrom(feed, copy, cursorOf(caughtUp(clock!)));
    expect([copy.get(kept.id), copy.get(gone.id), copy.get(users.id)]).toEqual([kept, gone, undefined]);
    await call("DELETE", `/notes/${gone.id}`);
    await syncFrom(feed, copy, cursor);
    expect([copy.get(kept.id), copy.get(gone.id)]).toEqual([kept, undefined]);
  });
});
