import { env } from "cloudflare:workers";
import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import { NoteMessage } from "../../../src/notes/messages";
import { DAY } from "../../../src/lib/units";
import { confirmEmailChange, emailChangeCode, quietRegister, storedCode } from "../../support/accounts";
import { call, fireCron, randomEmail } from "../../support/app";
import { openLive, type LiveSocket } from "../../support/live";
import { Note } from "../../support/notes";
import { text, uploaded } from "../attachments/support";
import { expectJson, noteOf, person, shared, type NoteJson, type Person } from "./support";

/**
 * The changes feed of notes shared with a reader (item 9 of issue 45, docs/sync.md "Notes shared with you"): the
 * share's start, each change and its end reach the grantee's feed in its own sequence, its sockets hear of each,
 * a client following the feed from any cursor converges to exactly the notes it can see, and the owner's feed is
 * unchanged.
 */

const Change = v.variant("type", [
  v.object({ type: v.literal("upsert"), note: Note, etag: v.string() }),
  v.object({ type: v.literal("delete"), id: v.number() }),
]);
const Page = v.object({ changes: v.array(Change), cursor: v.string(), has_more: v.boolean() });
type Page = v.InferOutput<typeof Page>;

const sockets: LiveSocket[] = [];
afterEach(() => {
  for (const live of sockets.splice(0)) live.socket.close(1000);
});

/** One page of `who`'s feed after `cursor`. */
async function feed(who: Person, cursor?: string, limit?: number): Promise<Page> {
  const query = new URLSearchParams({ ...(cursor ? { cursor } : {}), ...(limit ? { limit: String(limit) } : {}) });
  const response = await who.send("GET", `/changes?${query.toString()}`);
  expect(response.status).toBe(200);
  return v.parse(Page, await response.json());
}

/** A device's copy of the notes and its cursor, kept by following the feed as docs/sync.md's client does. */
class Device {
  readonly notes = new Map<number, NoteJson>();
  cursor: string | undefined;
  /** Whose session it syncs with (a new one after the account's address changed). */
  who: Person;
  readonly limit: number | undefined;
  constructor(who: Person, limit?: number) {
    this.who = who;
    this.limit = limit;
  }

  async sync(): Promise<void> {
    for (;;) {
      const page = await feed(this.who, this.cursor, this.limit);
      for (const change of page.changes) {
        if (change.type === "upsert") this.notes.set(change.note.id, change.note);
        else this.notes.delete(change.id);
      }
      this.cursor = page.cursor;
      if (!page.has_more) return;
    }
  }
}

/** Exactly the notes `who` can see: its own and those shared with it, by id. */
async function visible(who: Person): Promise<Map<number, NoteJson>> {
  const own = v.parse(v.array(Note), await (await who.send("GET", "/notes")).json());
  const sharedWith = v.parse(v.array(Note), await (await who.send("GET", "/notes?shared=true")).json());
  return new Map([...own, ...sharedWith].map((note) => [note.id, note]));
}

/** `who`'s live socket, closed after the test. */
async function live(who: Person): Promise<LiveSocket> {
  const socket = await openLive(who.token);
  sockets.push(socket);
  return socket;
}

/** Expects frame `index` of `socket` to be a `changed` poke. */
async function poked(socket: LiveSocket, index: number): Promise<void> {
  expect(JSON.parse((await socket.frame(index)) ?? "null")).toMatchObject({ type: "changed" });
}

describe("the changes feed of notes shared with a reader", () => {
  it("reports the share's start, each change and its end in order, with the note's own ETag, and pokes the grantee each time", async () => {
    const owner = await person();
    const grantee = await person();
    const note = await noteOf(owner, "Trip", "day 1");
    const device = new Device(grantee);
    await device.sync();
    const socket = await live(grantee);

    const share = await shared(owner, note.id, grantee.email, "editor");
    await poked(socket, 1);
    const started = await feed(grantee, device.cursor);
    const etag = (await owner.send("GET", `/notes/${note.id}`)).headers.get("etag");
    expect(started.changes).toEqual([{ type: "upsert", note, etag }]);

    const edited = await owner.send("PATCH", `/notes/${note.id}`, { content: "day 2" });
    await poked(socket, 2);
    const byEditor = await grantee.send("PATCH", `/notes/${note.id}`, { title: "Trip!" });
    await poked(socket, 3);
    expect(edited.status).toBe(200);
    const afterEdits = await feed(grantee, started.cursor);
    // Each note at most once a page, in its latest state.
    const latest = { ...note, title: "Trip!", content: "day 2" };
    expect(afterEdits.changes).toEqual([{ type: "upsert", note: latest, etag: byEditor.headers.get("etag") }]);

    // An attachment added moves the note on: the client lists its attachments again.
    await uploaded(owner.token, note.id, text("photo"), "photo.txt");
    await poked(socket, 4);
    const withPhoto = (await owner.send("GET", `/notes/${note.id}`)).headers.get("etag");
    expect(withPhoto).not.toBe(byEditor.headers.get("etag"));
    expect((await feed(grantee, afterEdits.cursor)).changes).toEqual([
      { type: "upsert", note: latest, etag: withPhoto },
    ]);

    expect((await owner.send("DELETE", `/notes/${note.id}/shares/${share.id}`)).status).toBe(204);
    await poked(socket, 5);
    await device.sync();
    expect(device.notes).toEqual(new Map());
    expect((await feed(grantee, started.cursor)).changes).toEqual([{ type: "delete", id: note.id }]);
  });

  it("brings a client that follows the feed from an old cursor to exactly the notes it can see, after share, edit, revoke, re-share and delete", async () => {
    const [owner, other] = [await person(), await person()];
    const grantee = await person();
    const stale = new Device(grantee, 2);
    const fresh = new Device(grantee);
    await stale.sync();
    const own = await noteOf(grantee, "Mine", "own");
    const [a, b, c, d] = [
      await noteOf(owner, "a"),
      await noteOf(owner, "b"),
      await noteOf(other, "c"),
      await noteOf(other, "d"),
    ];
    const shareA = await shared(owner, a.id, grantee.email);
    await shared(owner, b.id, grantee.email, "editor");
    await shared(other, c.id, grantee.email);
    const steps: Array<() => Promise<unknown>> = [
      () => owner.send("PATCH", `/notes/${a.id}`, { content: "a2" }),
      () => grantee.send("PATCH", `/notes/${b.id}`, { content: "b by the editor" }),
      () => owner.send("DELETE", `/notes/${a.id}/shares/${shareA.id}`),
      () => owner.send("PATCH", `/notes/${a.id}`, { content: "a3, unseen" }),
      () => shared(owner, a.id, grantee.email, "editor"),
      () => other.send("DELETE", `/notes/${c.id}`),
      () => grantee.send("PATCH", `/notes/${own.id}`, { content: "own2" }),
      () => owner.send("DELETE", `/notes/${b.id}`),
      () => shared(other, d.id, grantee.email),
    ];
    for (const [i, step] of steps.entries()) {
      await step();
      // One device follows after every step, the other only at the end: both end where the server is.
      if (i % 3 === 0) await fresh.sync();
    }
    await fresh.sync();
    await stale.sync();
    const expected = await visible(grantee);
    expect(expected).toEqual(
      new Map([
        [own.id, { ...own, content: "own2" }],
        [a.id, { ...a, content: "a3, unseen" }],
        [d.id, d],
      ]),
    );
    expect(fresh.notes).toEqual(expected);
    expect(stale.notes).toEqual(expected);
    // And from scratch.
    const scratch = new Device(grantee);
    await scratch.sync();
    expect(scratch.notes).toEqual(expected);
  });

  it("leaves the owner's feed unchanged: sharing, changing a role and revoking write nothing in it", async () => {
    const owner = await person();
    const grantee = await person();
    const note = await noteOf(owner);
    const before = await feed(owner);
    const share = await shared(owner, note.id, grantee.email);
    expect((await owner.send("PATCH", `/notes/${note.id}/shares/${share.id}`, { role: "editor" })).status).toBe(200);
    expect((await grantee.send("DELETE", `/notes/${note.id}/shares/${share.id}`)).status).toBe(204);
    expect(await feed(owner, before.cursor)).toEqual({ changes: [], cursor: before.cursor, has_more: false });
    // An editor's change is a change of the note, in its owner's feed like the owner's own.
    await shared(owner, note.id, grantee.email, "editor");
    const edited = await grantee.send("PATCH", `/notes/${note.id}`, { content: "edited" });
    expect((await feed(owner, before.cursor)).changes).toEqual([
      { type: "upsert", note: { ...note, content: "edited" }, etag: edited.headers.get("etag") },
    ]);
  });

  it("pokes the grantee's sockets when the note is deleted, and not the owner's for a share", async () => {
    const owner = await person();
    const grantee = await person();
    const note = await noteOf(owner);
    const [ownerSocket, granteeSocket] = [await live(owner), await live(grantee)];
    await shared(owner, note.id, grantee.email);
    await poked(granteeSocket, 1);
    expect((await owner.send("DELETE", `/notes/${note.id}`)).status).toBe(204);
    await poked(granteeSocket, 2);
    await poked(ownerSocket, 1);
    expect(ownerSocket.frames).toHaveLength(2);
    const page = await feed(grantee);
    expect(page.changes).toEqual([{ type: "delete", id: note.id }]);
  });

  it("starts the note in the feed of an account that verifies the address later, at registration or by an e-mail change", async () => {
    const owner = await person();
    const [first, second] = [await noteOf(owner, "first"), await noteOf(owner, "second")];
    const newcomer = randomEmail();
    await shared(owner, first.id, newcomer);
    expect((await quietRegister(newcomer)).status).toBe(201);
    expect(
      (await call("POST", "/auth/verify-email", { email: newcomer, token: (await storedCode(newcomer))!.code })).status,
    ).toBe(200);
    const fromScratch = new Device(await person(newcomer));
    await fromScratch.sync();
    expect([...fromScratch.notes.values()]).toEqual([first]);

    // An account that already follows its feed, and takes an address a note was shared with.
    const mover = await person();
    const device = new Device(mover);
    await device.sync();
    const target = randomEmail();
    await shared(owner, second.id, target, "editor");
    const code = await emailChangeCode(mover.email, mover.token, target);
    expect((await confirmEmailChange(mover.token, code)).status).toBe(200);
    // The change ended the account's other sessions: the device signs in again, and keeps its cursor.
    device.who = await person(target);
    await device.sync();
    expect([...device.notes.values()]).toEqual([second]);
  });

  it("keeps a share's end like a deletion: once the cron prunes it, an older cursor is a 410", async () => {
    const owner = await person();
    const grantee = await person();
    const note = await noteOf(owner);
    const before = (await feed(grantee)).cursor;
    const share = await shared(owner, note.id, grantee.email);
    expect((await owner.send("DELETE", `/notes/${note.id}/shares/${share.id}`)).status).toBe(204);
    const after = (await feed(grantee, before)).cursor;
    await env.DB.prepare("UPDATE shared_changes SET ended_at = ? WHERE reader = ?")
      .bind(Date.now() - 31 * DAY, grantee.userId)
      .run();
    await fireCron();
    expect(
      await env.DB.prepare("SELECT count(*) AS n FROM shared_changes WHERE reader = ?").bind(grantee.userId).first("n"),
    ).toBe(0);
    await expectJson(await grantee.send("GET", `/changes?cursor=${before}`), 410, { error: NoteMessage.cursorExpired });
    expect((await feed(grantee, after)).changes).toEqual([]);
    expect((await feed(grantee)).changes).toEqual([]);
  });

  it("sees every change once and converges while 20 edits by the owner and an editor race the grantee's pulls", async () => {
    const owner = await person();
    const editor = await person();
    const note = await noteOf(owner);
    await shared(owner, note.id, editor.email, "editor");
    const device = new Device(editor);
    const writes = Array.from({ length: 20 }, (_, i) =>
      (i % 2 ? owner : editor).send("PATCH", `/notes/${note.id}`, { content: `edit ${i}` }),
    );
    const pulls = Array.from({ length: 5 }, () => device.sync());
    await Promise.all([...writes, ...pulls]);
    await device.sync();
    expect(device.notes).toEqual(await visible(editor));
  });
});
