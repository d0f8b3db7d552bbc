import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { Contract } from "../contract";
import { call, JSON_TYPE, jsonOf, TEXT, textOf } from "../support/app";
import { error } from "../support/notes";

/** A note as the API renders it. */
interface NoteJson {
  id: number;
  title: string;
  content: string;
  created_at: string;
}

/** A note row as D1 holds it, read with plain SQL (created_at is epoch milliseconds). */
interface StoredNote {
  id: number;
  title: string;
  content: string;
  created_at: number;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const MAX_SAFE = String(Number.MAX_SAFE_INTEGER); // 9007199254740991

/** A fresh string per call, so a test can find (or not find) exactly its own rows. */
function marker(prefix = "note"): string {
  return `${prefix}-${crypto.randomUUID()}`;
}

/** Creates a note through the API and returns it as the API rendered it. */
async function createNote(title = marker("title"), content = marker("content")): Promise<NoteJson> {
  const response = await call("POST", "/notes", { title, content });
  if (response.status !== 201)
    throw new Error(`expected 201 creating a note, got ${response.status}: ${await response.text()}`);
  return (await response.json()) as NoteJson;
}

async function storedNote(id: number): Promise<StoredNote | null> {
  return env.DB.prepare("SELECT id, title, content, created_at FROM notes WHERE id = ?").bind(id).first<StoredNote>();
}

/** How many stored notes carry `text` as their title or content. */
async function notesWith(text: string): Promise<number> {
  const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM notes WHERE title = ? OR content = ?")
    .bind(text, text)
    .first<{ n: number }>();
  return row!.n;
}

function asStored(note: NoteJson): StoredNote {
  return { id: note.id, title: note.title, content: note.content, created_at: Date.parse(note.created_at) };
}

describe("GET /notes", () => {
  it("returns 200 JSON with the created notes as exact objects, in ascending id order", async () => {
    const created = [await createNote(), await createNote(), await createNote()];

    const result = await jsonOf(await call("GET", "/notes"));
    expect(result.status).toBe(200);
    expect(result.type).toBe(JSON_TYPE);
    const list = result.body as NoteJson[];
    expect(Array.isArray(list)).toBe(true);

    const mine = list.filter((note) => created.some((c) => c.id === note.id));
    expect(mine).toEqual(created);
    expect(created[0]!.id).toBeLessThan(created[1]!.id);
    expect(created[1]!.id).toBeLessThan(created[2]!.id);
  });

  it("lists every note with exactly id, title, content and created_at, ids strictly ascending", async () => {
    await createNote();
    await createNote();

    const list = (await jsonOf(await call("GET", "/notes"))).body as NoteJson[];
    expect(list.length).toBeGreaterThanOrEqual(2);
    for (const note of list) {
      expect(Object.keys(note).sort()).toEqual(["content", "created_at", "id", "title"]);
      expect(Number.isSafeInteger(note.id)).toBe(true);
      expect(typeof note.title).toBe("string");
      expect(typeof note.content).toBe("string");
      expect(note.created_at).toMatch(ISO);
    }
    const ids = list.map((note) => note.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("matches what GET /notes/{id} returns for each created note", async () => {
    const note = await createNote();
    const list = (await jsonOf(await call("GET", "/notes"))).body as NoteJson[];
    const single = await jsonOf(await call("GET", `/notes/${note.id}`));
    expect(list.find((n) => n.id === note.id)).toEqual(single.body);
  });

  it("no longer lists a deleted note", async () => {
    const kept = await createNote();
    const deleted = await createNote();
    expect((await call("DELETE", `/notes/${deleted.id}`)).status).toBe(204);

    const list = (await jsonOf(await call("GET", "/notes"))).body as NoteJson[];
    expect(list.some((n) => n.id === deleted.id)).toBe(false);
    expect(list.find((n) => n.id === kept.id)).toEqual(kept);
  });
});

describe("POST /notes", () => {
  it("returns 201 JSON with the new note: assigned id, the given title and content, an ISO created_at", async () => {
    const title = marker("title");
    const content = marker("content");
    const before = Date.now();
    const result = await jsonOf(await call("POST", "/notes", { title, content }));
    const after = Date.now();

    const note = result.body as NoteJson;
    expect(result).toEqual({
      status: 201,
      type: JSON_TYPE,
      body: { id: note.id, title, content, created_at: note.created_at },
    });
    expect(Number.isSafeInteger(note.id)).toBe(true);
    expect(note.id).toBeGreaterThan(0);
    expect(note.created_at).toMatch(ISO);
    expect(new Date(note.created_at).toISOString()).toBe(note.created_at);
    expect(Date.parse(note.created_at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(note.created_at)).toBeLessThanOrEqual(after);
  });

  it("stores the note in D1 as returned", async () => {
    const note = await createNote();
    expect(await storedNote(note.id)).toEqual(asStored(note));
  });

  it("makes the new note readable through GET /notes/{id}", async () => {
    const note = await createNote();
    expect(await jsonOf(await call("GET", `/notes/${note.id}`))).toEqual({ status: 200, type: JSON_TYPE, body: note });
  });

  it("assigns increasing ids to successive notes", async () => {
    const first = await createNote();
    const second = await createNote();
    expect(second.id).toBeGreaterThan(first.id);
  });

  it("ignores id, created_at and unknown fields in the body", async () => {
    const title = marker("title");
    const existing = await createNote();
    const result = await jsonOf(
      await call("POST", "/notes", {
        title,
        content: "c",
        id: existing.id,
        created_at: "2000-01-01T00:00:00.000Z",
        extra: true,
      }),
    );
    const note = result.body as NoteJson;
    expect(result).toEqual({
      status: 201,
      type: JSON_TYPE,
      body: { id: note.id, title, content: "c", created_at: note.created_at },
    });
    expect(note.id).not.toBe(existing.id);
    expect(note.created_at).not.toBe("2000-01-01T00:00:00.000Z");
    expect(note.created_at).toMatch(ISO);
    expect(await storedNote(existing.id)).toEqual(asStored(existing));
    expect(await storedNote(note.id)).toEqual(asStored(note));
  });

  it("accepts empty content", async () => {
    const title = marker("title");
    const result = await jsonOf(await call("POST", "/notes", { title, content: "" }));
    const note = result.body as NoteJson;
    expect(result).toEqual({
      status: 201,
      type: JSON_TYPE,
      body: { id: note.id, title, content: "", created_at: note.created_at },
    });
    expect(await storedNote(note.id)).toEqual(asStored(note));
  });

  it("accepts a title of exactly 200 characters", async () => {
    const title = marker("t").padEnd(200, "x");
    expect(title).toHaveLength(200);
    const result = await jsonOf(await call("POST", "/notes", { title, content: "c" }));
    const note = result.body as NoteJson;
    expect(result).toEqual({
      status: 201,
      type: JSON_TYPE,
      body: { id: note.id, title, content: "c", created_at: note.created_at },
    });
    expect((await storedNote(note.id))?.title).toBe(title);
  });

  it("rejects a title of 201 characters with 400 JSON and stores nothing", async () => {
    const content = marker("content");
    const title = "x".repeat(201);
    expect(await jsonOf(await call("POST", "/notes", { title, content }))).toEqual(
      error(400, "title must be at most 200 characters"),
    );
    expect(await notesWith(content)).toBe(0);
  });

  it("counts title characters as code points: 200 emoji are accepted", async () => {
    const title = "😀".repeat(200);
    const content = marker("content");
    const result = await jsonOf(await call("POST", "/notes", { title, content }));
    const note = result.body as NoteJson;
    expect(result).toEqual({
      status: 201,
      type: JSON_TYPE,
      body: { id: note.id, title, content, created_at: note.created_at },
    });
    expect((await storedNote(note.id))?.title).toBe(title);
  });

  it("rejects 201 emoji as a title over 200 characters", async () => {
    const content = marker("content");
    expect(await jsonOf(await call("POST", "/notes", { title: "😀".repeat(201), content }))).toEqual(
      error(400, "title must be at most 200 characters"),
    );
    expect(await notesWith(content)).toBe(0);
  });

  it.each([
    ["a whitespace-only", " \t\n "],
    ["an empty", ""],
  ])("rejects %s title with 400 JSON and stores nothing", async (_label, title) => {
    const content = marker("content");
    expect(await jsonOf(await call("POST", "/notes", { title, content }))).toEqual(
      error(400, "title must not be empty"),
    );
    expect(await notesWith(content)).toBe(0);
  });

  it.each([
    ["missing", undefined],
    ["null", null],
    ["a number", 5],
    ["a boolean", true],
    ["an array", ["t"]],
    ["an object", { text: "t" }],
  ])("rejects a title that is %s with 400 JSON and stores nothing", async (_label, title) => {
    const content = marker("content");
    expect(await jsonOf(await call("POST", "/notes", { title, content }))).toEqual(
      error(400, "title is required and must be a string"),
    );
    expect(await notesWith(content)).toBe(0);
  });

  it.each([
    ["missing", undefined],
    ["null", null],
    ["a number", 5],
    ["a boolean", false],
    ["an array", ["c"]],
    ["an object", { text: "c" }],
  ])("rejects content that is %s with 400 JSON and stores nothing", async (_label, content) => {
    const title = marker("title");
    expect(await jsonOf(await call("POST", "/notes", { title, content }))).toEqual(
      error(400, "content is required and must be a string"),
    );
    expect(await notesWith(title)).toBe(0);
  });

  it("reports the missing title first when both fields are missing", async () => {
    expect(await jsonOf(await call("POST", "/notes", {}))).toEqual(
      error(400, "title is required and must be a string"),
    );
  });

  it("rejects malformed JSON with 400 JSON and stores nothing", async () => {
    const title = marker("title");
    expect(await jsonOf(await call("POST", "/notes", `{"title": "${title}", "content": "c"`))).toEqual(
      error(400, "Request body must be valid JSON."),
    );
    expect(await notesWith(title)).toBe(0);
  });

  it("rejects a JSON array body with 400 JSON and stores nothing", async () => {
    const title = marker("title");
    expect(await jsonOf(await call("POST", "/notes", [{ title, content: "c" }]))).toEqual(
      error(400, "Request body must be a JSON object."),
    );
    expect(await notesWith(title)).toBe(0);
  });

  it.each([
    ["a string", JSON.stringify("just a string")],
    ["a number", "42"],
    ["null", "null"],
    ["empty", ""],
  ])("rejects a JSON body that is %s with 400 JSON", async (_label, raw) => {
    expect(await jsonOf(await call("POST", "/notes", raw))).toEqual(error(400, "Request body must be a JSON object."));
  });

  it("stores and returns emoji and non-Latin title and content unchanged", async () => {
    const title = `Заметка 笔记 ملاحظة 😀👍🏽 ${marker("")}`;
    const content = "Ünïcödé — 日本語のテキスト\nשלום עולם 🎉👨‍👩‍👧‍👦 e\u0301 \u{1F600}";
    const result = await jsonOf(await call("POST", "/notes", { title, content }));
    const note = result.body as NoteJson;
    expect(result).toEqual({
      status: 201,
      type: JSON_TYPE,
      body: { id: note.id, title, content, created_at: note.created_at },
    });

    const row = await storedNote(note.id);
    expect(row?.title).toBe(title);
    expect(row?.content).toBe(content);
    expect((await jsonOf(await call("GET", `/notes/${note.id}`))).body).toEqual({
      id: note.id,
      title,
      content,
      created_at: note.created_at,
    });
  });

  it.each([
    ["title", { title: "\ud800".repeat(200), content: "x" }],
    ["content", { title: "ok", content: "x\udc00" }],
  ])("refuses a lone UTF-16 surrogate in the %s, which D1 could not store as sent", async (_field, fields) => {
    const content = marker("content");
    const body = { ...fields, content: `${fields.content}${content}` };
    expect(await jsonOf(await call("POST", "/notes", body))).toEqual(
      error(400, "Request body must not contain unpaired UTF-16 surrogates."),
    );
    const stored = await env.DB.prepare("SELECT COUNT(*) AS n FROM notes WHERE content LIKE ?")
      .bind(`%${content}`)
      .first<{ n: number }>();
    expect(stored!.n).toBe(0);
  });
});

describe("GET /notes/{id}", () => {
  it("returns 200 JSON with the note as an exact object", async () => {
    const title = marker("title");
    const content = marker("content");
    const note = await createNote(title, content);
    const result = await jsonOf(await call("GET", `/notes/${note.id}`));
    expect(result).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: { id: note.id, title, content, created_at: note.created_at },
    });
    expect(note.created_at).toMatch(ISO);
  });

  it("returns 404 JSON when the note does not exist", async () => {
    const note = await createNote();
    await call("DELETE", `/notes/${note.id}`);
    expect(await jsonOf(await call("GET", `/notes/${note.id}`))).toEqual(error(404, Contract.noteNotFound));
  });

  it("returns 404 JSON for the largest safe integer id", async () => {
    expect(await jsonOf(await call("GET", `/notes/${MAX_SAFE}`))).toEqual(error(404, Contract.noteNotFound));
  });

  it.each(["0", "-1"])("treats %s as an integer id: 404 JSON", async (id) => {
    expect(await jsonOf(await call("GET", `/notes/${id}`))).toEqual(error(404, Contract.noteNotFound));
  });

  it.each(["abc", "1.5", "1e3", "9007199254740993", "0x10", "1abc"])(
    "returns 400 JSON when the id is %s, not a safe decimal integer",
    async (id) => {
      expect(await jsonOf(await call("GET", `/notes/${id}`))).toEqual(error(400, Contract.invalidNoteId));
    },
  );
});

describe("PATCH /notes/{id}", () => {
  it("answers the contract's 400 for a bad id even when the body is bad too: the id is checked first", async () => {
    for (const body of ["{", { title: 5 }, { title: "" }]) {
      expect(await jsonOf(await call("PATCH", "/notes/abc", body))).toEqual(error(400, Contract.invalidNoteId));
    }
  });

  it("changes only the title when only the title is sent", async () => {
    const note = await createNote();
    const title = marker("new-title");
    const result = await jsonOf(await call("PATCH", `/notes/${note.id}`, { title }));
    const expected = { ...note, title };
    expect(result).toEqual({ status: 200, type: JSON_TYPE, body: expected });
    expect(await storedNote(note.id)).toEqual(asStored(expected));
  });

  it("changes only the content when only the content is sent", async () => {
    const note = await createNote();
    const content = marker("new-content");
    const result = await jsonOf(await call("PATCH", `/notes/${note.id}`, { content }));
    const expected = { ...note, content };
    expect(result).toEqual({ status: 200, type: JSON_TYPE, body: expected });
    expect(await storedNote(note.id)).toEqual(asStored(expected));
  });

  it("changes both fields when both are sent, keeping id and created_at", async () => {
    const note = await createNote();
    const title = marker("new-title");
    const content = marker("new-content");
    const result = await jsonOf(await call("PATCH", `/notes/${note.id}`, { title, content }));
    const expected = { id: note.id, title, content, created_at: note.created_at };
    expect(result).toEqual({ status: 200, type: JSON_TYPE, body: expected });
    expect(await storedNote(note.id)).toEqual(asStored(expected));
  });

  it("makes the change visible to GET /notes/{id}", async () => {
    const note = await createNote();
    const title = marker("new-title");
    await call("PATCH", `/notes/${note.id}`, { title });
    expect(await jsonOf(await call("GET", `/notes/${note.id}`))).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: { ...note, title },
    });
  });

  it("leaves other notes untouched", async () => {
    const target = await createNote();
    const other = await createNote();
    await call("PATCH", `/notes/${target.id}`, { title: marker(), content: marker() });
    expect(await storedNote(other.id)).toEqual(asStored(other));
  });

  it("returns the note unchanged with 200 for an empty object", async () => {
    const note = await createNote();
    expect(await jsonOf(await call("PATCH", `/notes/${note.id}`, {}))).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: note,
    });
    expect(await storedNote(note.id)).toEqual(asStored(note));
  });

  it("ignores id and created_at in the body and returns the note unchanged", async () => {
    const note = await createNote();
    const result = await jsonOf(
      await call("PATCH", `/notes/${note.id}`, { id: 999, created_at: "2000-01-01T00:00:00.000Z" }),
    );
    expect(result).toEqual({ status: 200, type: JSON_TYPE, body: note });
    expect(await storedNote(note.id)).toEqual(asStored(note));
  });

  it("keeps id and created_at when they are sent along with a real change", async () => {
    const note = await createNote();
    const other = await createNote();
    const title = marker("new-title");
    const result = await jsonOf(
      await call("PATCH", `/notes/${note.id}`, { title, id: other.id, created_at: "2000-01-01T00:00:00.000Z" }),
    );
    const expected = { ...note, title };
    expect(result).toEqual({ status: 200, type: JSON_TYPE, body: expected });
    expect(await storedNote(note.id)).toEqual(asStored(expected));
    expect(await storedNote(other.id)).toEqual(asStored(other));
  });

  it("keeps created_at unchanged across several updates", async () => {
    const note = await createNote();
    for (let i = 0; i < 3; i++) {
      const result = await jsonOf(await call("PATCH", `/notes/${note.id}`, { content: `revision ${i}` }));
      expect((result.body as NoteJson).created_at).toBe(note.created_at);
    }
    expect((await storedNote(note.id))?.created_at).toBe(Date.parse(note.created_at));
  });

  it("accepts empty content", async () => {
    const note = await createNote();
    const result = await jsonOf(await call("PATCH", `/notes/${note.id}`, { content: "" }));
    expect(result).toEqual({ status: 200, type: JSON_TYPE, body: { ...note, content: "" } });
    expect((await storedNote(note.id))?.content).toBe("");
  });

  it("accepts a title of exactly 200 characters and 200 emoji", async () => {
    const note = await createNote();
    const plain = "y".repeat(200);
    expect(await jsonOf(await call("PATCH", `/notes/${note.id}`, { title: plain }))).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: { ...note, title: plain },
    });
    const emoji = "😀".repeat(200);
    expect(await jsonOf(await call("PATCH", `/notes/${note.id}`, { title: emoji }))).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: { ...note, title: emoji },
    });
    expect((await storedNote(note.id))?.title).toBe(emoji);
  });

  it.each([
    ["201 characters", "x".repeat(201)],
    ["201 emoji", "😀".repeat(201)],
  ])("rejects a title of %s with 400 JSON and leaves the row unchanged", async (_label, title) => {
    const note = await createNote();
    expect(await jsonOf(await call("PATCH", `/notes/${note.id}`, { title }))).toEqual(
      error(400, "title must be at most 200 characters"),
    );
    expect(await storedNote(note.id)).toEqual(asStored(note));
  });

  it.each([
    ["a whitespace-only", "   "],
    ["an empty", ""],
  ])("rejects %s title with 400 JSON and leaves the row unchanged", async (_label, title) => {
    const note = await createNote();
    expect(await jsonOf(await call("PATCH", `/notes/${note.id}`, { title }))).toEqual(
      error(400, "title must not be empty"),
    );
    expect(await storedNote(note.id)).toEqual(asStored(note));
  });

  it.each([
    ["null", null],
    ["a number", 5],
    ["a boolean", true],
    ["an array", ["t"]],
    ["an object", { text: "t" }],
  ])("rejects a title that is %s with 400 JSON and leaves the row unchanged", async (_label, title) => {
    const note = await createNote();
    expect(await jsonOf(await call("PATCH", `/notes/${note.id}`, { title }))).toEqual(
      error(400, "title must be a string"),
    );
    expect(await storedNote(note.id)).toEqual(asStored(note));
  });

  it.each([
    ["null", null],
    ["a number", 5],
    ["a boolean", false],
    ["an array", ["c"]],
    ["an object", { text: "c" }],
  ])("rejects content that is %s with 400 JSON and leaves the row unchanged", async (_label, content) => {
    const note = await createNote();
    expect(await jsonOf(await call("PATCH", `/notes/${note.id}`, { content }))).toEqual(
      error(400, "content must be a string"),
    );
    expect(await storedNote(note.id)).toEqual(asStored(note));
  });

  it("changes nothing when one of two fields is invalid", async () => {
    const note = await createNote();
    expect(await jsonOf(await call("PATCH", `/notes/${note.id}`, { title: marker(), content: 5 }))).toEqual(
      error(400, "content must be a string"),
    );
    expect(await storedNote(note.id)).toEqual(asStored(note));
  });

  it("rejects malformed JSON with 400 JSON and leaves the row unchanged", async () => {
    const note = await createNote();
    expect(await jsonOf(await call("PATCH", `/notes/${note.id}`, '{"title": "x"'))).toEqual(
      error(400, "Request body must be valid JSON."),
    );
    expect(await storedNote(note.id)).toEqual(asStored(note));
  });

  it.each([
    ["a JSON array", JSON.stringify([{ title: "x" }])],
    ["a JSON string", JSON.stringify("x")],
  ])("rejects %s body with 400 JSON and leaves the row unchanged", async (_label, raw) => {
    const note = await createNote();
    expect(await jsonOf(await call("PATCH", `/notes/${note.id}`, raw))).toEqual(
      error(400, "Request body must be a JSON object."),
    );
    expect(await storedNote(note.id)).toEqual(asStored(note));
  });

  it("stores and returns emoji and non-Latin text unchanged", async () => {
    const note = await createNote();
    const title = "Обновлено 更新 😀🚀";
    const content = "محتوى جديد — 新しい内容 👩🏽‍💻";
    const result = await jsonOf(await call("PATCH", `/notes/${note.id}`, { title, content }));
    expect(result).toEqual({ status: 200, type: JSON_TYPE, body: { ...note, title, content } });
    expect(await storedNote(note.id)).toEqual(asStored({ ...note, title, content }));
  });

  it("returns 404 JSON when the note does not exist, for an empty body", async () => {
    const note = await createNote();
    await call("DELETE", `/notes/${note.id}`);
    expect(await jsonOf(await call("PATCH", `/notes/${note.id}`, {}))).toEqual(error(404, Contract.noteNotFound));
  });

  it("returns 404 JSON when the note does not exist, for a real change, and creates nothing", async () => {
    const note = await createNote();
    await call("DELETE", `/notes/${note.id}`);
    const title = marker("title");
    expect(await jsonOf(await call("PATCH", `/notes/${note.id}`, { title, content: "c" }))).toEqual(
      error(404, Contract.noteNotFound),
    );
    expect(await jsonOf(await call("PATCH", `/notes/${MAX_SAFE}`, { title }))).toEqual(
      error(404, Contract.noteNotFound),
    );
    expect(await storedNote(note.id)).toBeNull();
    expect(await notesWith(title)).toBe(0);
  });

  it.each(["abc", "1.5", "1e3", "9007199254740993"])("returns 400 JSON when the id is %s", async (id) => {
    expect(await jsonOf(await call("PATCH", `/notes/${id}`, { title: "x" }))).toEqual(
      error(400, Contract.invalidNoteId),
    );
  });
});

describe("DELETE /notes/{id}", () => {
  it("returns 204 with an empty body and removes the row from D1", async () => {
    const note = await createNote();
    const response = await call("DELETE", `/notes/${note.id}`);
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    expect(await storedNote(note.id)).toBeNull();
  });

  it("returns 404 JSON on a second DELETE", async () => {
    const note = await createNote();
    expect((await call("DELETE", `/notes/${note.id}`)).status).toBe(204);
    expect(await jsonOf(await call("DELETE", `/notes/${note.id}`))).toEqual(error(404, Contract.noteNotFound));
  });

  it("makes GET and PATCH answer 404 afterwards", async () => {
    const note = await createNote();
    expect((await call("DELETE", `/notes/${note.id}`)).status).toBe(204);
    expect(await jsonOf(await call("GET", `/notes/${note.id}`))).toEqual(error(404, Contract.noteNotFound));
    expect(await jsonOf(await call("PATCH", `/notes/${note.id}`, { title: "back" }))).toEqual(
      error(404, Contract.noteNotFound),
    );
  });

  it("removes only the given note", async () => {
    const deleted = await createNote();
    const kept = await createNote();
    expect((await call("DELETE", `/notes/${deleted.id}`)).status).toBe(204);
    expect(await storedNote(kept.id)).toEqual(asStored(kept));
  });

  it("does not reuse the id of a deleted note", async () => {
    const note = await createNote();
    expect((await call("DELETE", `/notes/${note.id}`)).status).toBe(204);
    const next = await createNote();
    expect(next.id).toBeGreaterThan(note.id);
  });

  it("returns 404 JSON when the note does not exist", async () => {
    expect(await jsonOf(await call("DELETE", `/notes/${MAX_SAFE}`))).toEqual(error(404, Contract.noteNotFound));
    expect(await jsonOf(await call("DELETE", "/notes/0"))).toEqual(error(404, Contract.noteNotFound));
  });

  it.each(["abc", "1.5", "1e3", "9007199254740993"])("returns 400 JSON when the id is %s", async (id) => {
    expect(await jsonOf(await call("DELETE", `/notes/${id}`))).toEqual(error(400, Contract.invalidNoteId));
  });
});

describe("unsupported methods on /notes and /notes/{id}", () => {
  const notAllowed = { status: 405, type: TEXT, body: Contract.methodNotAllowed };

  it.each(["PUT", "PATCH", "DELETE", "OPTIONS"])(
    "answers %s /notes with 405 plain text and Allow: GET, POST",
    async (method) => {
      const response = await call(method, "/notes");
      expect(response.headers.get("allow")).toBe("GET, POST");
      expect(await textOf(response)).toEqual(notAllowed);
    },
  );

  it("does not create a note on PUT /notes", async () => {
    const title = marker("title");
    const response = await call("PUT", "/notes", { title, content: "c" });
    expect(response.headers.get("allow")).toBe("GET, POST");
    expect(await textOf(response)).toEqual(notAllowed);
    expect(await notesWith(title)).toBe(0);
  });

  it.each(["PUT", "POST", "OPTIONS"])(
    "answers %s /notes/{id} with 405 plain text and Allow: GET, PATCH, DELETE",
    async (method) => {
      const note = await createNote();
      const response = await call(method, `/notes/${note.id}`);
      expect(response.headers.get("allow")).toBe("GET, PATCH, DELETE");
      expect(await textOf(response)).toEqual(notAllowed);
      expect(await storedNote(note.id)).toEqual(asStored(note));
    },
  );

  it("answers 405 on PUT /notes/{id} with a body and leaves the note unchanged", async () => {
    const note = await createNote();
    const response = await call("PUT", `/notes/${note.id}`, { title: marker(), content: marker() });
    expect(response.headers.get("allow")).toBe("GET, PATCH, DELETE");
    expect(await textOf(response)).toEqual(notAllowed);
    expect(await storedNote(note.id)).toEqual(asStored(note));
  });

  it("answers 405 for a valid id whether or not the note exists", async () => {
    for (const id of ["1", MAX_SAFE, "0", "-1"]) {
      const response = await call("PUT", `/notes/${id}`);
      expect(response.headers.get("allow")).toBe("GET, PATCH, DELETE");
      expect(await textOf(response)).toEqual(notAllowed);
    }
  });

  it.each([
    ["PUT", "abc"],
    ["POST", "1.5"],
    ["OPTIONS", "1e3"],
    ["PUT", "9007199254740993"],
  ])("checks the id before the method: %s /notes/%s is 400 JSON", async (method, id) => {
    expect(await jsonOf(await call(method, `/notes/${id}`))).toEqual(error(400, Contract.invalidNoteId));
  });

  it.each([
    ["GET", "/notes/1/extra"],
    ["DELETE", "/notes/1/extra"],
    ["GET", "/notes/abc/extra"],
    ["GET", "/notesx"],
  ])("answers %s %s, an unknown path, with 404 JSON", async (method, path) => {
    expect(await jsonOf(await call(method, path))).toEqual(error(404, "Not found"));
  });
});
