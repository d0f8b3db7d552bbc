import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { UPLOAD_WINDOW_MS } from "../../../src/notes/attachments/policy";
import { HOUR } from "../../../src/lib/units";
import { bearer } from "../../support/accounts";
import { call, fireCron, PASSWORD } from "../../support/app";
import { openLive } from "../../support/live";
import { newNote, objectBytes, owner, PNG, send, storedRow, text, upload, uploaded, watchedBucket } from "./support";

/**
 * An attachment belongs to its note (src/notes/attachments/store.ts, lifecycle.ts, cleanup.ts): adding or
 * deleting one moves the note on; the note's and the account's deletion take the rows at once and the objects
 * at the next cron run; nothing in R2 outlives its row by more than a run.
 */

async function etagOf(token: string, noteId: number): Promise<string> {
  const response = await send("GET", `/notes/${noteId}`, { token });
  expect(response.status).toBe(200);
  return response.headers.get("etag")!;
}

/** The ids of the notes /changes reports after `cursor` (from the start without one), and the next cursor. */
async function changesAfter(token: string, cursor?: string) {
  const query = cursor === undefined ? "" : `?cursor=${cursor}`;
  const page = (await (await send("GET", `/changes${query}`, { token })).json()) as {
    changes: Array<{ type: string; note?: { id: number }; etag?: string }>;
    cursor: string;
  };
  return {
    notes: page.changes.map((change) => change.note?.id),
    etags: page.changes.map((c) => c.etag),
    cursor: page.cursor,
  };
}

const removalQueued = (key: string) =>
  env.DB.prepare("SELECT queued_at FROM attachment_removals WHERE key = ?").bind(key).first<number>("queued_at");

describe("a note's revision", () => {
  it("moves when an attachment is added or deleted: a new ETag, and /changes reports the note", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const before = await etagOf(token, noteId);
    const { cursor } = await changesAfter(token);
    const stored = await uploaded(token, noteId, PNG);
    const added = await etagOf(token, noteId);
    expect(added).not.toBe(before);
    const afterAdd = await changesAfter(token, cursor);
    expect(afterAdd.notes).toEqual([noteId]);
    expect(afterAdd.etags).toEqual([added]);
    expect((await send("DELETE", `/notes/${noteId}/attachments/${stored.id}`, { token })).status).toBe(204);
    const removed = await etagOf(token, noteId);
    expect(removed).not.toBe(added);
    expect((await changesAfter(token, afterAdd.cursor)).notes).toEqual([noteId]);
  });

  it("stays when nothing was stored or deleted", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const before = await etagOf(token, noteId);
    expect((await upload(token, noteId, text("abc"), { headers: { "Content-Length": "4" } })).status).toBe(400);
    expect((await send("DELETE", `/notes/${noteId}/attachments/AAAAAAAAAAAAAAAAAAAAAA`, { token })).status).toBe(404);
    expect(await etagOf(token, noteId)).toBe(before);
  });

  it("pokes the account's live sockets on each add and delete, with the write's bookmark", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const live = await openLive(token);
    const added = await upload(token, noteId, PNG);
    expect(added.status).toBe(201);
    const changed = (bookmark: string | null) => JSON.stringify({ type: "changed", bookmark });
    expect(await live.frame(1)).toBe(changed(added.headers.get("x-d1-bookmark")));
    const { id } = (await added.json()) as { id: string };
    const deleted = await send("DELETE", `/notes/${noteId}/attachments/${id}`, { token });
    expect(await live.frame(2)).toBe(changed(deleted.headers.get("x-d1-bookmark")));
    live.socket.close(1000);
  });
});

describe("DELETE /notes/{id}/attachments/{attachmentId}", () => {
  it("answers 204 and deletes the row and the R2 object at once", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const stored = await uploaded(token, noteId, PNG);
    const response = await send("DELETE", `/notes/${noteId}/attachments/${stored.id}`, { token });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    expect(await storedRow(stored.id)).toBeNull();
    expect(await objectBytes(stored.id)).toBeNull();
    expect(await send("GET", `/notes/${noteId}/attachments`, { token }).then((r) => r.json())).toEqual([]);
  });

  it("answers 204 even when R2 fails; the next cron run deletes the object", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const stored = await uploaded(token, noteId, PNG);
    const { bucket } = watchedBucket({ failDeletes: true });
    const response = await send("DELETE", `/notes/${noteId}/attachments/${stored.id}`, {
      token,
      env: { ATTACHMENTS: bucket },
    });
    expect(response.status).toBe(204);
    expect(await storedRow(stored.id)).toBeNull();
    expect(await objectBytes(stored.id)).toEqual(PNG);
    await fireCron();
    expect(await objectBytes(stored.id)).toBeNull();
  });
});

describe("the cascade", () => {
  it("deletes a note's attachments with the note: the rows at once, the objects at the next cron run", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const kept = await uploaded(token, await newNote(token), PNG);
    const files = [await uploaded(token, noteId, PNG), await uploaded(token, noteId, text("two"))];
    expect((await send("DELETE", `/notes/${noteId}`, { token })).status).toBe(204);
    for (const file of files) {
      expect(await storedRow(file.id)).toBeNull();
      expect(await removalQueued(file.id)).toEqual(expect.any(Number));
    }
    await fireCron();
    for (const file of files) expect(await objectBytes(file.id)).toBeNull();
    // Another note's attachment stays, row and object.
    expect(await storedRow(kept.id)).not.toBeNull();
    expect(await objectBytes(kept.id)).toEqual(PNG);
  });

  it("deletes every attachment of a deleted account: the rows at once, the objects at the next cron run", async () => {
    const { token, userId } = await owner();
    const files = [await uploaded(token, await newNote(token), PNG), await uploaded(token, await newNote(token), PNG)];
    expect((await call("DELETE", "/auth/account", { password: PASSWORD }, bearer(token))).status).toBe(204);
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM attachments WHERE user_id = ?")
      .bind(userId)
      .first("n");
    expect(rows).toBe(0);
    await fireCron();
    for (const file of files) expect(await objectBytes(file.id)).toBeNull();
  });
});

describe("the hourly clean-up", () => {
  /** A reservation made `age` ago whose upload never completed, with (or without) the object R2 got of it. */
  async function reservation(userId: number, noteId: number, age: number, withObject: boolean): Promise<string> {
    const id = crypto.randomUUID();
    await env.DB.prepare(
      "INSERT INTO attachments (id, note_id, user_id, filename, size, created_at) VALUES (?, ?, ?, 'f', 3, ?)",
    )
      .bind(id, noteId, userId, Date.now() - age)
      .run();
    if (withObject) await env.ATTACHMENTS.put(id, text("abc"));
    return id;
  }

  it("removes uploads that never completed (rows past the upload window, and their objects), not those under way", async () => {
    const { token, userId } = await owner();
    const noteId = await newNote(token);
    const stored = await uploaded(token, noteId, PNG);
    const died = await reservation(userId, noteId, UPLOAD_WINDOW_MS + 1000, true);
    const diedEarly = await reservation(userId, noteId, UPLOAD_WINDOW_MS + 1000, false);
    const underWay = await reservation(userId, noteId, 60_000, false);
    await fireCron();
    expect(await storedRow(died)).toBeNull();
    expect(await objectBytes(died)).toBeNull();
    expect(await storedRow(diedEarly)).toBeNull();
    expect(await storedRow(underWay)).not.toBeNull();
    // No row points at a missing object: the stored one keeps both.
    expect(await objectBytes(stored.id)).toEqual(PNG);
    expect(await storedRow(stored.id)).not.toBeNull();
  });

  it("deletes a queued object again at each run until the key is old enough that no upload can still write it", async () => {
    const key = crypto.randomUUID();
    await env.DB.prepare("INSERT INTO attachment_removals (key, queued_at) VALUES (?, ?)").bind(key, Date.now()).run();
    await env.ATTACHMENTS.put(key, text("late"));
    await fireCron();
    expect(await objectBytes(key)).toBeNull();
    expect(await removalQueued(key)).toEqual(expect.any(Number));
    // An upload whose row was deleted while its bytes came lands after that run: the next one still deletes it.
    await env.ATTACHMENTS.put(key, text("later"));
    await env.DB.prepare("UPDATE attachment_removals SET queued_at = ? WHERE key = ?")
      .bind(Date.now() - 3 * HOUR, key)
      .run();
    await fireCron();
    expect(await objectBytes(key)).toBeNull();
    expect(await removalQueued(key)).toBeNull();
  });
});
