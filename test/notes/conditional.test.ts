import { describe, expect, it } from "vitest";
import * as v from "valibot";
import { NoteMessage } from "../../src/notes/messages";
import { Contract } from "../contract";
import { logIn, verifiedAccount } from "../support/accounts";
import { call, callWithEnv, jsonOf, tally } from "../support/app";
import { error, Note } from "../support/notes";

/**
 * Revisions and conditional requests on notes (src/notes/conditional.ts): ETags, If-None-Match, If-Match
 * decided by the write itself, NOTES_REQUIRE_IF_MATCH, and the list's ETag.
 */

const ETAG = /^"[1-9][0-9]*"$/;

async function created(title = `t-${crypto.randomUUID()}`, content = "c"): Promise<{ id: number; etag: string }> {
  const response = await call("POST", "/notes", { title, content });
  expect(response.status).toBe(201);
  const etag = response.headers.get("etag")!;
  expect(etag).toMatch(ETAG);
  return { id: v.parse(Note, await response.json()).id, etag };
}

const patch = (id: number, body: unknown, headers: Record<string, string> = {}) =>
  call("PATCH", `/notes/${id}`, body, headers);

describe("ETag", () => {
  it("comes with POST, GET and PATCH; a change of title or content gives a new one, the same values keep it", async () => {
    const { id, etag } = await created("first", "c");
    const read = await call("GET", `/notes/${id}`);
    expect(read.headers.get("etag")).toBe(etag);

    const changed = await patch(id, { title: "second" });
    expect(changed.status).toBe(200);
    const next = changed.headers.get("etag")!;
    expect(next).toMatch(ETAG);
    expect(next).not.toBe(etag);

    expect((await patch(id, { title: "second", content: "c" })).headers.get("etag")).toBe(next);
    expect((await patch(id, {})).headers.get("etag")).toBe(next);
  });

  it("keeps the note JSON exactly the spec's", async () => {
    const { id } = await created("shape", "c");
    expect(Object.keys((await jsonOf(await call("GET", `/notes/${id}`))).body as object)).toEqual([
      "id",
      "title",
      "content",
      "created_at",
    ]);
  });

  it("is the same on an idempotent replay as on the create it replays", async () => {
    const key = crypto.randomUUID();
    const first = await call("POST", "/notes", { title: "once", content: "c" }, { "Idempotency-Key": key });
    const again = await call("POST", "/notes", { title: "once", content: "c" }, { "Idempotency-Key": key });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(first.headers.get("etag")).toMatch(ETAG);
    expect(again.headers.get("etag")).toBe(first.headers.get("etag"));
  });
});

describe("GET /notes/{id} with If-None-Match", () => {
  it.each([
    ["its ETag", (etag: string) => etag],
    ["a list holding it", (etag: string) => `"1", ${etag}, "other"`],
    ["*", () => "*"],
    ["its ETag made weak (as the edge may)", (etag: string) => `W/${etag}`],
  ])("answers 304 with no body and the ETag for %s", async (_case, header) => {
    const { id, etag } = await created();
    const response = await call("GET", `/notes/${id}`, undefined, { "If-None-Match": header(etag) });
    expect(response.status).toBe(304);
    expect(response.headers.get("etag")).toBe(etag);
    expect(await response.text()).toBe("");
  });

  it("answers 200 once the note has changed, 404 for a note that does not exist, 400 for a malformed header", async () => {
    const { id, etag } = await created();
    await patch(id, { content: "new" });
    expect((await call("GET", `/notes/${id}`, undefined, { "If-None-Match": etag })).status).toBe(200);
    expect(await jsonOf(await call("GET", "/notes/999999999", undefined, { "If-None-Match": "*" }))).toEqual(
      error(404, Contract.noteNotFound),
    );
    expect(await jsonOf(await call("GET", `/notes/${id}`, undefined, { "If-None-Match": "no quotes" }))).toEqual(
      error(400, NoteMessage.invalidIfNoneMatch),
    );
  });
});

describe("PATCH and DELETE with If-Match", () => {
  it("writes when the ETag is current, and answers the new one", async () => {
    const { id, etag } = await created();
    const response = await patch(id, { title: "matched" }, { "If-Match": etag });
    expect(response.status).toBe(200);
    expect(v.parse(Note, await response.json()).title).toBe("matched");
    expect(response.headers.get("etag")).not.toBe(etag);
  });

  it("answers 412 with the current ETag for a stale one, and changes nothing", async () => {
    const { id, etag } = await created("original");
    const current = (await patch(id, { content: "moved on" })).headers.get("etag")!;
    const stale = await patch(id, { title: "lost update" }, { "If-Match": etag });
    expect(await jsonOf(stale.clone())).toEqual(error(412, NoteMessage.preconditionFailed));
    expect(stale.headers.get("etag")).toBe(current);
    expect(v.parse(Note, await (await call("GET", `/notes/${id}`)).json()).title).toBe("original");

    const deleted = await call("DELETE", `/notes/${id}`, undefined, { "If-Match": etag });
    expect(deleted.status).toBe(412);
    expect((await call("GET", `/notes/${id}`)).status).toBe(200);
    expect((await call("DELETE", `/notes/${id}`, undefined, { "If-Match": current })).status).toBe(204);
  });

  it("writes when any tag of a list is current, and a list of tags we never made matches nothing", async () => {
    const { id, etag } = await created("listed");
    const listed = await patch(
      id,
      { content: "second of three" },
      { "If-Match": `"999999", ${etag}, "another-server"` },
    );
    expect(listed.status).toBe(200);
    const current = listed.headers.get("etag")!;

    const foreign = await patch(id, { content: "never" }, { "If-Match": '"another-server", W/"x-1"' });
    expect(await jsonOf(foreign.clone())).toEqual(error(412, NoteMessage.preconditionFailed));
    expect(foreign.headers.get("etag")).toBe(current);
    expect((await call("DELETE", `/notes/${id}`, undefined, { "If-Match": '"another-server"' })).status).toBe(412);
    expect(v.parse(Note, await (await call("GET", `/notes/${id}`)).json()).content).toBe("second of three");
  });

  it("takes * as any existing note, and a weak form of the ETag as the ETag", async () => {
    const { id, etag } = await created();
    expect((await patch(id, { content: "any" }, { "If-Match": "*" })).status).toBe(200);
    const now = (await call("GET", `/notes/${id}`)).headers.get("etag")!;
    expect((await patch(id, { content: "weak" }, { "If-Match": `W/${now}` })).status).toBe(200);
    expect((await patch(id, { content: "old" }, { "If-Match": `W/${etag}` })).status).toBe(412);
  });

  it("checks the id first (400), then whether the note exists (404), then the ETag", async () => {
    expect(await jsonOf(await patch(Number.NaN, { title: "x" }, { "If-Match": '"1"' }))).toEqual(
      error(400, Contract.invalidNoteId),
    );
    expect(await jsonOf(await call("PATCH", "/notes/abc", { title: 1 }, { "If-Match": "nonsense" }))).toEqual(
      error(400, Contract.invalidNoteId),
    );
    expect(await jsonOf(await patch(999999999, { title: "x" }, { "If-Match": '"1"' }))).toEqual(
      error(404, Contract.noteNotFound),
    );
    expect(await jsonOf(await call("DELETE", "/notes/999999999", undefined, { "If-Match": "*" }))).toEqual(
      error(404, Contract.noteNotFound),
    );
    const { id } = await created();
    expect(await jsonOf(await patch(id, { title: "x" }, { "If-Match": "nonsense" }))).toEqual(
      error(400, NoteMessage.invalidIfMatch),
    );
    expect(await jsonOf(await patch(id, {}, { "If-Match": '"1"' }))).toEqual(
      error(412, NoteMessage.preconditionFailed),
    );
  });

  it("lets exactly one of 20 concurrent PATCHes with one If-Match win, and the note holds the winner's change", async () => {
    const { id, etag } = await created();
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => patch(id, { title: `writer ${i}` }, { "If-Match": etag })),
    );
    expect(tally(responses)).toEqual({ 200: 1, 412: 19 });
    const winner = responses.find((response) => response.status === 200)!;
    const { title } = v.parse(Note, await winner.json());
    const stored = await call("GET", `/notes/${id}`);
    expect(v.parse(Note, await stored.json()).title).toBe(title);
    expect(stored.headers.get("etag")).toBe(winner.headers.get("etag"));
  });

  it("lets one of a PATCH and a DELETE with one If-Match win", async () => {
    const { id, etag } = await created();
    const [patched, deleted] = await Promise.all([
      patch(id, { title: "x" }, { "If-Match": etag }),
      call("DELETE", `/notes/${id}`, undefined, { "If-Match": etag }),
    ]);
    expect([patched.status, deleted.status].sort()).toEqual(patched.status === 200 ? [200, 412] : [204, 404]);
  });
});

describe("NOTES_REQUIRE_IF_MATCH=true", () => {
  const required = { NOTES_REQUIRE_IF_MATCH: "true" };

  it("answers 428 to a PATCH or DELETE without If-Match, and changes nothing", async () => {
    const { id, etag } = await created("kept");
    expect(await jsonOf(await callWithEnv(required, "PATCH", `/notes/${id}`, { title: "x" }))).toEqual(
      error(428, NoteMessage.ifMatchRequired),
    );
    expect(await jsonOf(await callWithEnv(required, "DELETE", `/notes/${id}`))).toEqual(
      error(428, NoteMessage.ifMatchRequired),
    );
    expect(v.parse(Note, await (await call("GET", `/notes/${id}`)).json()).title).toBe("kept");
    expect((await callWithEnv(required, "PATCH", `/notes/${id}`, { title: "x" }, { "If-Match": etag })).status).toBe(
      200,
    );
  });

  it("still answers the spec's 400 for a bad id first", async () => {
    expect(await jsonOf(await callWithEnv(required, "DELETE", "/notes/abc"))).toEqual(
      error(400, Contract.invalidNoteId),
    );
  });
});

describe("GET /notes with If-None-Match", () => {
  /** A user of NOTES_AUTH=required: a list of their own, untouched by other tests. */
  async function user() {
    const { token } = await logIn(await verifiedAccount());
    const headers = { Authorization: `Bearer ${token}` };
    const send = (method: string, path: string, body?: unknown, extra: Record<string, string> = {}) =>
      callWithEnv({ NOTES_AUTH: "required" }, method, path, body, { ...headers, ...extra });
    return { send };
  }

  it("answers 304 while nothing the list covers has changed, and a new ETag after a create, a change or a delete", async () => {
    const { send } = await user();
    const first = await send("POST", "/notes", { title: "a", content: "c" });
    const { id } = v.parse(Note, await first.json());
    const listed = await send("GET", "/notes");
    const etag = listed.headers.get("etag")!;
    expect(etag).toMatch(/^"list-/);
    const polled = await send("GET", "/notes", undefined, { "If-None-Match": etag });
    expect(polled.status).toBe(304);
    expect(polled.headers.get("etag")).toBe(etag);
    expect(await polled.text()).toBe("");

    const tags = [etag];
    for (const write of [
      () => send("POST", "/notes", { title: "b", content: "c" }),
      () => send("PATCH", `/notes/${id}`, { content: "changed" }),
      () => send("DELETE", `/notes/${id}`),
    ]) {
      await write();
      const again = await send("GET", "/notes", undefined, { "If-None-Match": tags.at(-1)! });
      expect(again.status).toBe(200);
      tags.push(again.headers.get("etag")!);
    }
    expect(new Set(tags).size).toBe(4);
  });

  it("gives each page its own ETag, and is not moved by another user's writes", async () => {
    const me = await user();
    const other = await user();
    for (const title of ["a", "b", "c"]) await me.send("POST", "/notes", { title, content: "c" });
    const page = await me.send("GET", "/notes?limit=2");
    const whole = await me.send("GET", "/notes");
    expect(page.headers.get("etag")).not.toBe(whole.headers.get("etag"));
    await other.send("POST", "/notes", { title: "theirs", content: "c" });
    expect(
      (await me.send("GET", "/notes?limit=2", undefined, { "If-None-Match": page.headers.get("etag")! })).status,
    ).toBe(304);
  });

  it("answers 401 for an ended session rather than a 304", async () => {
    const email = await verifiedAccount();
    const { token } = await logIn(email);
    const headers = { Authorization: `Bearer ${token}` };
    const etag = (await callWithEnv({ NOTES_AUTH: "required" }, "GET", "/notes", undefined, headers)).headers.get(
      "etag",
    )!;
    await call("POST", "/auth/logout", undefined, headers);
    const response = await callWithEnv({ NOTES_AUTH: "required" }, "GET", "/notes", undefined, {
      ...headers,
      "If-None-Match": etag,
    });
    expect(response.status).toBe(401);
  });
});
