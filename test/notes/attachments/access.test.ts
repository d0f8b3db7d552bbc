import { describe, expect, it } from "vitest";
import { AttachmentMessage } from "../../../src/notes/attachments/messages";
import { NoteMessage } from "../../../src/notes/messages";
import { bearer, logIn } from "../../support/accounts";
import { call, jsonOf } from "../../support/app";
import { error } from "../../support/notes";
import { newNote, objectBytes, owner, PNG, send, storedRow, text, upload, uploaded } from "./support";

/** Who may call which attachment route: accounts only; each their own notes' files; nothing tells what exists. */

describe("another account", () => {
  it("gets 404 from every route for a note and an attachment that are not its own, and changes nothing", async () => {
    const mine = await owner();
    const theirs = await owner();
    const noteId = await newNote(mine.token);
    const stored = await uploaded(mine.token, noteId, PNG);
    const token = theirs.token;
    expect(await jsonOf(await upload(token, noteId, text("x")))).toEqual(error(404, NoteMessage.notFound));
    expect(await jsonOf(await send("GET", `/notes/${noteId}/attachments`, { token }))).toEqual(
      error(404, NoteMessage.notFound),
    );
    const path = `/notes/${noteId}/attachments/${stored.id}`;
    expect(await jsonOf(await send("GET", path, { token }))).toEqual(error(404, AttachmentMessage.notFound));
    expect(await jsonOf(await send("GET", path, { token, headers: { Range: "bytes=0-1" } }))).toEqual(
      error(404, AttachmentMessage.notFound),
    );
    expect(await jsonOf(await send("DELETE", path, { token }))).toEqual(error(404, AttachmentMessage.notFound));
    // Their own note, with my attachment's id: still not theirs.
    const ownNote = await newNote(token);
    expect(await jsonOf(await send("GET", `/notes/${ownNote}/attachments/${stored.id}`, { token }))).toEqual(
      error(404, AttachmentMessage.notFound),
    );
    expect(await jsonOf(await send("DELETE", `/notes/${ownNote}/attachments/${stored.id}`, { token }))).toEqual(
      error(404, AttachmentMessage.notFound),
    );
    // The same answers as for what does not exist at all.
    expect(await jsonOf(await send("GET", `/notes/999999999/attachments`, { token }))).toEqual(
      error(404, NoteMessage.notFound),
    );
    expect(await storedRow(stored.id)).not.toBeNull();
    expect(await objectBytes(stored.id)).toEqual(PNG);
    const listed = await send("GET", `/notes/${noteId}/attachments`, { token: mine.token });
    expect(((await listed.json()) as unknown[]).length).toBe(1);
  });
});

describe("without an account", () => {
  it("answers 401 without a token, or once the session has ended", async () => {
    const { token, email } = await owner();
    const noteId = await newNote(token);
    const stored = await uploaded(token, noteId, PNG);
    const unauthorized = { ...error(401, NoteMessage.unauthorized) };
    for (const [method, path] of [
      ["POST", `/notes/${noteId}/attachments`],
      ["GET", `/notes/${noteId}/attachments`],
      ["GET", `/notes/${noteId}/attachments/${stored.id}`],
      ["DELETE", `/notes/${noteId}/attachments/${stored.id}`],
    ] as const) {
      const response = await send(method, path, { headers: { "Content-Length": "0" } });
      expect(await jsonOf(response)).toEqual(unauthorized);
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
    }
    const other = (await logIn(email)).token;
    expect((await send("POST", "/auth/logout", { token })).status).toBe(204);
    expect(await jsonOf(await upload(token, noteId, text("x")))).toEqual(unauthorized);
    expect(await jsonOf(await send("DELETE", `/notes/${noteId}/attachments/${stored.id}`, { token }))).toEqual(
      unauthorized,
    );
    expect((await send("GET", `/notes/${noteId}/attachments`, { token: other })).status).toBe(200);
  });

  it("answers every route with a 404 saying attachments need accounts while notes are public (NOTES_AUTH=off)", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const stored = await uploaded(token, noteId, PNG);
    const needsAccounts = error(404, AttachmentMessage.needsAccounts);
    const headers = { ...bearer(token), "Content-Length": "1", "Content-Type": "application/octet-stream" };
    expect(await jsonOf(await call("POST", `/notes/${noteId}/attachments`, "x", headers))).toEqual(needsAccounts);
    expect(await jsonOf(await call("GET", `/notes/${noteId}/attachments`, undefined, headers))).toEqual(needsAccounts);
    const path = `/notes/${noteId}/attachments/${stored.id}`;
    expect(await jsonOf(await call("GET", path, undefined, headers))).toEqual(needsAccounts);
    expect(await jsonOf(await call("DELETE", path, undefined, headers))).toEqual(needsAccounts);
    expect(await jsonOf(await call("GET", new URL(stored.url).pathname))).toEqual(needsAccounts);
    expect(await storedRow(stored.id)).not.toBeNull();
  });
});

describe("other methods", () => {
  it("answer 405 with Allow", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const stored = await uploaded(token, noteId, PNG);
    for (const [path, allow] of [
      [`/notes/${noteId}/attachments`, "POST, GET"],
      [`/notes/${noteId}/attachments/${stored.id}`, "GET, DELETE"],
      [`/attachments/${stored.id}`, "GET"],
    ] as const) {
      const response = await send("PUT", path, { token, body: "x" });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe(allow);
      expect(await response.text()).toBe("Method not allowed");
    }
  });
});
