import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { AttachmentMessage } from "../../../src/notes/attachments/messages";
import { Attachment } from "../../../src/notes/attachments/shapes";
import { NoteMessage } from "../../../src/notes/messages";
import { tally } from "../../support/app";
import { Note } from "../../support/notes";
import { linkPath, text, uploaded } from "../attachments/support";
import { expectJson, noteOf, person, rows, send, shared, type NoteJson, type Person } from "./support";

/**
 * What a grantee may do with a note shared with it (items 7 and 8 of issue 45): read it and its attachments; as
 * an editor change them under the owner's lost-update rules; never delete the note; nothing once the share ends.
 */

const Notes = v.array(Note);

/** An owner, a note of its, and an account it is shared with as `role`. */
async function sharedNote(role: "viewer" | "editor") {
  const owner = await person();
  const grantee = await person();
  const note = await noteOf(owner, "Plan", "v1");
  const share = await shared(owner, note.id, grantee.email, role);
  return { owner, grantee, note, share };
}

describe("a grantee's GET /notes/{id}", () => {
  it("answers the note as its owner gets it, with the same ETag, and 304 on If-None-Match", async () => {
    const { owner, grantee, note } = await sharedNote("viewer");
    const asOwner = await owner.send("GET", `/notes/${note.id}`);
    const asGrantee = await grantee.send("GET", `/notes/${note.id}`);
    expect(asGrantee.status).toBe(200);
    expect(asGrantee.headers.get("etag")).toBe(asOwner.headers.get("etag"));
    expect(await asGrantee.text()).toBe(await asOwner.text());
    const etag = asGrantee.headers.get("etag")!;
    const unchanged = await grantee.send("GET", `/notes/${note.id}`, undefined, { "If-None-Match": etag });
    expect(unchanged.status).toBe(304);
    expect(unchanged.headers.get("etag")).toBe(etag);
  });

  it("answers 404 from the request after the owner revokes the share, and after the grantee leaves", async () => {
    const { owner, grantee, note, share } = await sharedNote("editor");
    expect((await grantee.send("GET", `/notes/${note.id}`)).status).toBe(200);
    expect((await owner.send("DELETE", `/notes/${note.id}/shares/${share.id}`)).status).toBe(204);
    await expectJson(await grantee.send("GET", `/notes/${note.id}`), 404, { error: NoteMessage.notFound });
    await expectJson(await grantee.send("PATCH", `/notes/${note.id}`, { title: "Mine now" }), 404, {
      error: NoteMessage.notFound,
    });
    await expectJson(await grantee.send("GET", `/notes/${note.id}/attachments`), 404, { error: NoteMessage.notFound });

    const again = await shared(owner, note.id, grantee.email);
    expect((await grantee.send("GET", `/notes/${note.id}`)).status).toBe(200);
    expect((await grantee.send("DELETE", `/notes/${note.id}/shares/${again.id}`)).status).toBe(204);
    await expectJson(await grantee.send("GET", `/notes/${note.id}`), 404, { error: NoteMessage.notFound });
  });

  it("leaves the grantee's own list and search to its own notes", async () => {
    const { grantee, note } = await sharedNote("viewer");
    const own = await noteOf(grantee, "Own", "mine");
    await expectJson(await grantee.send("GET", "/notes"), 200, [own]);
    await expectJson(await grantee.send("GET", `/notes?q=${note.title}`), 200, []);
  });
});

describe("GET /notes?shared=true", () => {
  it("lists the notes shared with the caller by id, paged like GET /notes with Link and ETag", async () => {
    const grantee = await person();
    const [first, second] = [await person(), await person()];
    const notes: NoteJson[] = [];
    for (const owner of [first, second, first]) {
      const note = await noteOf(owner, `For ${grantee.email}`, String(notes.length));
      await shared(owner, note.id, grantee.email, notes.length === 1 ? "editor" : "viewer");
      notes.push(note);
    }
    await noteOf(first, "Not shared", "x");
    await noteOf(grantee, "Own", "x");

    const all = await grantee.send("GET", "/notes?shared=true");
    expect(all.status).toBe(200);
    expect(v.parse(Notes, await all.json())).toEqual(notes);
    const etag = all.headers.get("etag")!;
    expect(etag).toMatch(/^"shared-\d+-all-start"$/);
    expect((await grantee.send("GET", "/notes?shared=true", undefined, { "If-None-Match": etag })).status).toBe(304);

    const page = await grantee.send("GET", "/notes?shared=true&limit=2");
    expect(v.parse(Notes, await page.json())).toEqual(notes.slice(0, 2));
    expect(page.headers.get("link")).toBe(`</notes?shared=true&limit=2&after=${notes[1]!.id}>; rel="next"`);
    const rest = await grantee.send("GET", `/notes?shared=true&limit=2&after=${notes[1]!.id}`);
    expect(v.parse(Notes, await rest.json())).toEqual(notes.slice(2));
    expect(rest.headers.get("link")).toBeNull();

    // A change to a shared note changes the list's ETag.
    expect((await first.send("PATCH", `/notes/${notes[0]!.id}`, { content: "changed" })).status).toBe(200);
    expect((await grantee.send("GET", "/notes?shared=true", undefined, { "If-None-Match": etag })).status).toBe(200);
  });

  it("answers [] for nobody's grantee, and refuses shared with q, or a value other than true and false", async () => {
    const caller = await person();
    await expectJson(await caller.send("GET", "/notes?shared=true"), 200, []);
    await expectJson(await caller.send("GET", "/notes?shared=false"), 200, []);
    await expectJson(await caller.send("GET", "/notes?shared=true&q=plan"), 400, {
      error: NoteMessage.sharedWithSearch,
    });
    await expectJson(await caller.send("GET", "/notes?shared=yes"), 400, { error: "shared must be true or false" });
  });
});

describe("a grantee's PATCH and DELETE /notes/{id}", () => {
  it("answers a viewer's PATCH 403 (an empty one too) and changes nothing", async () => {
    const { owner, grantee, note } = await sharedNote("viewer");
    const refused = { error: NoteMessage.viewerCannotChange };
    await expectJson(await grantee.send("PATCH", `/notes/${note.id}`, { content: "v2" }), 403, refused);
    await expectJson(await grantee.send("PATCH", `/notes/${note.id}`, {}), 403, refused);
    await expectJson(await owner.send("GET", `/notes/${note.id}`), 200, note);
  });

  it("lets an editor PATCH with If-Match: 200 with the new ETag, then 412 on the stale one, as for the owner", async () => {
    const { owner, grantee, note } = await sharedNote("editor");
    const etag = (await grantee.send("GET", `/notes/${note.id}`)).headers.get("etag")!;
    const edited = await grantee.send("PATCH", `/notes/${note.id}`, { content: "v2" }, { "If-Match": etag });
    expect(edited.status).toBe(200);
    const fresh = edited.headers.get("etag")!;
    expect(fresh).not.toBe(etag);
    expect(await edited.json()).toEqual({ ...note, content: "v2" });
    const stale = await owner.send("PATCH", `/notes/${note.id}`, { content: "v3" }, { "If-Match": etag });
    expect(stale.headers.get("etag")).toBe(fresh);
    await expectJson(stale, 412, { error: NoteMessage.preconditionFailed });
    const staleEditor = await grantee.send("PATCH", `/notes/${note.id}`, { content: "v3" }, { "If-Match": etag });
    await expectJson(staleEditor, 412, { error: NoteMessage.preconditionFailed });
    await expectJson(await owner.send("GET", `/notes/${note.id}`), 200, { ...note, content: "v2" });
  });

  it("lets exactly one of 20 PATCHes sent together by the owner and an editor with one If-Match through", async () => {
    const { owner, grantee, note } = await sharedNote("editor");
    const etag = (await owner.send("GET", `/notes/${note.id}`)).headers.get("etag")!;
    const writers: Person[] = Array.from({ length: 20 }, (_, i) => (i % 2 ? owner : grantee));
    const answers = await Promise.all(
      writers.map((writer, i) =>
        writer.send("PATCH", `/notes/${note.id}`, { content: `by ${i}` }, { "If-Match": etag }),
      ),
    );
    expect(tally(answers)).toEqual({ 200: 1, 412: 19 });
    const winner = answers.findIndex((answer) => answer.status === 200);
    await expectJson(await owner.send("GET", `/notes/${note.id}`), 200, { ...note, content: `by ${winner}` });
    const after = answers[winner]!.headers.get("etag");
    for (const answer of answers.filter((_, i) => i !== winner)) expect(answer.headers.get("etag")).toBe(after);
  });

  it("answers any grantee's DELETE 403, If-Match or not, and deletes nothing; the owner still deletes", async () => {
    for (const role of ["viewer", "editor"] as const) {
      const { owner, grantee, note } = await sharedNote(role);
      const refused = { error: NoteMessage.onlyOwnerDeletes };
      await expectJson(await grantee.send("DELETE", `/notes/${note.id}`), 403, refused);
      await expectJson(await grantee.send("DELETE", `/notes/${note.id}`, undefined, { "If-Match": "*" }), 403, refused);
      expect((await owner.send("GET", `/notes/${note.id}`)).status).toBe(200);
      expect((await owner.send("DELETE", `/notes/${note.id}`)).status).toBe(204);
      await expectJson(await grantee.send("GET", `/notes/${note.id}`), 404, { error: NoteMessage.notFound });
    }
  });

  it("answers a stranger the contract's 404 for every method", async () => {
    const { note } = await sharedNote("editor");
    const stranger = await person();
    for (const method of ["GET", "PATCH", "DELETE"])
      await expectJson(
        await stranger.send(method, `/notes/${note.id}`, method === "PATCH" ? { content: "x" } : undefined),
        404,
        {
          error: NoteMessage.notFound,
        },
      );
  });
});

describe("a shared note's attachments", () => {
  /** An upload through the app, expecting `status`. */
  async function uploadAs(who: Person, noteId: number, body: string, status: number) {
    const response = await send("POST", `/notes/${noteId}/attachments?filename=a.txt`, {
      token: who.token,
      body: text(body),
      headers: { "Content-Length": String(text(body).byteLength) },
    });
    expect(response.status).toBe(status);
    return response;
  }

  it("lets a viewer list and download them, and refuses it an upload and a deletion with 403", async () => {
    const { owner, grantee, note } = await sharedNote("viewer");
    const attachment = await uploaded(owner.token, note.id, text("hello"), "hello.txt");
    const listed = await grantee.send("GET", `/notes/${note.id}/attachments`);
    expect(listed.status).toBe(200);
    expect(v.parse(v.array(Attachment), await listed.json()).map((one) => one.id)).toEqual([attachment.id]);
    const download = await grantee.send("GET", `/notes/${note.id}/attachments/${attachment.id}`);
    expect(download.status).toBe(200);
    expect(await download.text()).toBe("hello");
    expect((await send("GET", linkPath(attachment.url))).status).toBe(200);
    await expectJson(await uploadAs(grantee, note.id, "mine", 403), 403, { error: NoteMessage.viewerCannotChange });
    await expectJson(await grantee.send("DELETE", `/notes/${note.id}/attachments/${attachment.id}`), 403, {
      error: NoteMessage.viewerCannotChange,
    });
    expect(await rows("attachments", "note_id = ?", note.id)).toHaveLength(1);
  });

  it("lets an editor add and delete them, each moving the note's ETag; its uploads count against the owner's quota", async () => {
    const { owner, grantee, note } = await sharedNote("editor");
    const before = (await owner.send("GET", `/notes/${note.id}`)).headers.get("etag");
    const added = v.parse(Attachment, await (await uploadAs(grantee, note.id, "from the editor", 201)).json());
    const between = (await owner.send("GET", `/notes/${note.id}`)).headers.get("etag");
    expect(between).not.toBe(before);
    expect(await rows("attachments", "id = ?", added.id)).toEqual([
      expect.objectContaining({ note_id: note.id, user_id: owner.userId, size: 15 }),
    ]);
    // The owner's quota: 15 bytes used by the editor's upload leave no room for 10 more under a 20-byte quota.
    const quota = { ATTACHMENT_QUOTA_BYTES: "20" };
    const over = await send("POST", `/notes/${note.id}/attachments`, {
      token: owner.token,
      body: text("0123456789"),
      headers: { "Content-Length": "10" },
      env: quota,
    });
    await expectJson(over, 413, { error: AttachmentMessage.quotaFull });
    expect((await grantee.send("DELETE", `/notes/${note.id}/attachments/${added.id}`)).status).toBe(204);
    expect((await owner.send("GET", `/notes/${note.id}`)).headers.get("etag")).not.toBe(between);
    expect(await rows("attachments", "note_id = ?", note.id)).toEqual([]);
  });
});
