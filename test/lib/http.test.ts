import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { storedUser } from "../support/accounts";
import { call, JSON_TYPE, jsonOf, PASSWORD, randomEmail, TEXT, textOf } from "../support/app";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("deeply nested JSON bodies", () => {
  const LONE_SURROGATE = "Request body must not contain unpaired UTF-16 surrogates.";
  const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

  // 3,500 levels were enough to overflow the stack of a recursive check (a 500).
  it("answers 400 plain text on /auth/register for 3,500 levels and a lone surrogate", async () => {
    const email = randomEmail();
    const body = `{"email":"${email}","password":"${PASSWORD}","x":${nested(3_500)},"y":"\\ud800"}`;
    expect(await textOf(await call("POST", "/auth/register", body))).toEqual({
      status: 400,
      type: TEXT,
      body: LONE_SURROGATE,
    });
    expect(await storedUser(email)).toBeNull();
  });

  it("answers 400 JSON on POST /notes for 3,500 levels and a lone surrogate", async () => {
    const body = `{"title":"t","content":"c","x":${nested(3_500)},"y":"\\ud800"}`;
    expect(await jsonOf(await call("POST", "/notes", body))).toEqual({
      status: 400,
      type: JSON_TYPE,
      body: { error: LONE_SURROGATE },
    });
  });

  it("registers with a deeply nested unknown field, which is ignored, and an escaped surrogate pair", async () => {
    const email = randomEmail();
    // 7,000 levels fill most of the 16 KiB; "\ud83d\ude00" is one emoji, written as a pair of escapes.
    const body = `{"email":"${email}","password":"${PASSWORD} \\ud83d\\ude00","x":${nested(7_000)}}`;
    expect((await call("POST", "/auth/register", body)).status).toBe(201);
    expect(await storedUser(email)).not.toBeNull();
  });

  it('creates a note with a deeply nested unknown field, an escaped pair and an escaped backslash before "ud800"', async () => {
    // `\\ud800` is a backslash followed by the letters "ud800": no surrogate at all.
    const body = `{"title":"C:\\\\ud800 \\ud83d\\ude00","content":"c","x":${nested(200_000)}}`;
    const response = await jsonOf(await call("POST", "/notes", body));
    expect(response).toMatchObject({
      status: 201,
      type: JSON_TYPE,
      body: { title: "C:\\ud800 \u{1F600}", content: "c" },
    });
    expect(Object.keys(response.body as object).sort()).toEqual(["content", "created_at", "id", "title"]);
  });
});

describe("request bodies that are not UTF-8", () => {
  const NOT_UTF8 = "Request body must be valid UTF-8.";
  const utf8 = (text: string) => new TextEncoder().encode(text);
  /** Raw bytes between two pieces of JSON text. */
  const withBytes = (before: string, bytes: number[], after: string) =>
    new Uint8Array([...utf8(before), ...bytes, ...utf8(after)]);

  it.each([
    ["0xC3 0x28 (a lead byte without its continuation)", [0xc3, 0x28]],
    ["a lone 0xFF", [0xff]],
    ["0xC0 0xAF (an overlong '/')", [0xc0, 0xaf]],
    ["0xED 0xA0 0x80 (a surrogate encoded as UTF-8)", [0xed, 0xa0, 0x80]],
  ])("answers 400 plain text on /auth/register for %s and creates no account", async (_case, bytes) => {
    const email = randomEmail();
    const body = withBytes(`{"email":"${email}","password":"${PASSWORD}`, bytes, '"}');
    expect(await textOf(await call("POST", "/auth/register", body))).toEqual({
      status: 400,
      type: TEXT,
      body: NOT_UTF8,
    });
    expect(await storedUser(email)).toBeNull();
  });

  it.each([
    ["0xC3 0x28 (a lead byte without its continuation)", [0xc3, 0x28]],
    ["a lone 0xFF", [0xff]],
  ])("answers 400 JSON on POST and PATCH /notes for %s and stores nothing", async (_case, bytes) => {
    const marker = crypto.randomUUID();
    const created = await call("POST", "/notes", withBytes(`{"title":"${marker}`, bytes, '","content":"c"}'));
    expect(await jsonOf(created)).toEqual({ status: 400, type: JSON_TYPE, body: { error: NOT_UTF8 } });
    const stored = await env.DB.prepare("SELECT COUNT(*) AS n FROM notes WHERE title LIKE ?")
      .bind(`${marker}%`)
      .first<{ n: number }>();
    expect(stored!.n).toBe(0);

    const { id } = (await (await call("POST", "/notes", { title: marker, content: "before" })).json()) as {
      id: number;
    };
    const patched = await call("PATCH", `/notes/${id}`, withBytes('{"content":"after', bytes, '"}'));
    expect(await jsonOf(patched)).toEqual({ status: 400, type: JSON_TYPE, body: { error: NOT_UTF8 } });
    const row = await env.DB.prepare("SELECT content FROM notes WHERE id = ?").bind(id).first<{ content: string }>();
    expect(row!.content).toBe("before");
  });
});
