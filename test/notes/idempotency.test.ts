import { env } from "cloudflare:workers";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { DAY } from "../../src/lib/units";
import { requestHash } from "../../src/notes/idempotency";
import { bearer, logIn, storedUser, verifiedAccount } from "../support/accounts";
import { call, callWithEnv, fireCron, JSON_TYPE, jsonOf, tally } from "../support/app";
import { error, Note } from "../support/notes";

/** POST /notes with an Idempotency-Key: each request created once, repeats answered from what was stored. */

const REQUIRED = { NOTES_AUTH: "required" };

/** A fresh key per test: other tests (and files) share the public scope. */
const newKey = () => `key-${crypto.randomUUID()}`;

function post(key: string | undefined, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return call("POST", "/notes", body, key === undefined ? headers : { ...headers, "Idempotency-Key": key });
}

/** The answer as a client sees it: status, content type, replay header, and the body's exact text. */
async function answer(response: Response) {
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    replayed: response.headers.get("idempotent-replayed"),
    text: await response.text(),
  };
}

async function notesTitled(title: string): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM notes WHERE title = ?")
    .bind(title)
    .first<{ n: number }>();
  return row!.n;
}

interface KeyRow {
  user_id: number | null;
  request_hash: string;
  response: string | null;
  created_at: number;
}

async function keyRows(key: string): Promise<KeyRow[]> {
  const { results } = await env.DB.prepare(
    "SELECT user_id, request_hash, response, created_at FROM idempotency_keys WHERE key = ? ORDER BY id",
  )
    .bind(key)
    .all<KeyRow>();
  return results;
}

const BAD_KEY = error(400, "Idempotency-Key must be 1 to 255 visible ASCII characters");
const REUSED = error(422, "This Idempotency-Key was already used with a different request");

describe("POST /notes with Idempotency-Key", () => {
  it("creates the note on the first request, answering 201 with the note and no replay header", async () => {
    const key = newKey();
    const title = `first ${key}`;
    const first = await answer(await post(key, { title, content: "body" }));
    expect(first).toMatchObject({ status: 201, type: JSON_TYPE, replayed: null });
    const note = v.parse(Note, JSON.parse(first.text));
    expect(note).toEqual({
      id: note.id,
      title,
      content: "body",
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(await notesTitled(title)).toBe(1);
    expect(await keyRows(key)).toEqual([
      {
        user_id: null,
        request_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
        response: first.text,
        created_at: expect.any(Number),
      },
    ]);
  });

  it("answers a repeat with the same status and body, byte for byte, and Idempotent-Replayed: true, creating nothing", async () => {
    const key = newKey();
    const title = `repeat ${key}`;
    const body = { title, content: 'line 1\nline 2 \u0001 "quoted" é 😀' };
    const first = await answer(await post(key, body));
    expect(first.status).toBe(201);
    const again = await answer(await post(key, body));
    expect(again).toEqual({ ...first, replayed: "true" });
    expect(await answer(await post(key, body))).toEqual({ ...first, replayed: "true" });
    expect(await notesTitled(title)).toBe(1);
  });

  it("treats the same note written as different JSON (order, spacing, escapes, ignored fields) as the same request", async () => {
    const key = newKey();
    const title = `same note ${key}`;
    const first = await answer(await post(key, { title, content: "é" }));
    const rewritten = `{ "content" : "\\u00e9",\n  "title": ${JSON.stringify(title)}, "extra": [1, 2] }`;
    expect(await answer(await post(key, rewritten))).toEqual({ ...first, replayed: "true" });
    expect(await notesTitled(title)).toBe(1);
  });

  it("replays the first answer even after the note was edited or deleted", async () => {
    const key = newKey();
    const body = { title: `edited later ${key}`, content: "original" };
    const first = await answer(await post(key, body));
    const { id } = v.parse(Note, JSON.parse(first.text));
    expect((await call("PATCH", `/notes/${id}`, { content: "changed" })).status).toBe(200);
    expect(await answer(await post(key, body))).toEqual({ ...first, replayed: "true" });
    expect((await call("DELETE", `/notes/${id}`)).status).toBe(204);
    expect(await answer(await post(key, body))).toEqual({ ...first, replayed: "true" });
    expect(await notesTitled(body.title)).toBe(0);
  });

  it("answers 422 JSON for the same key with a different body, and creates nothing", async () => {
    const key = newKey();
    const title = `mismatch ${key}`;
    expect((await post(key, { title, content: "one" })).status).toBe(201);
    expect(await jsonOf(await post(key, { title, content: "two" }))).toEqual(REUSED);
    expect(await jsonOf(await post(key, { title: `${title}!`, content: "one" }))).toEqual(REUSED);
    expect(await notesTitled(title)).toBe(1);
    expect(await notesTitled(`${title}!`)).toBe(0);
    expect(await keyRows(key)).toHaveLength(1);
  });

  it("answers 409 JSON while the key's first request has not stored its answer", async () => {
    // Our own creates claim, create and store in one transaction, so no request can find a key in this
    // state (a concurrent repeat waits and gets the replay, see the burst below); the row is written by
    // hand, as a request still running would hold it.
    const key = newKey();
    const title = `in progress ${key}`;
    const hash = await requestHash(title, "c");
    await env.DB.prepare(
      "INSERT INTO idempotency_keys (user_id, key, request_hash, claim, response, created_at) VALUES (NULL, ?, ?, 'other', NULL, ?)",
    )
      .bind(key, hash, Date.now())
      .run();
    expect(await jsonOf(await post(key, { title, content: "c" }))).toEqual(
      error(409, "A request with this Idempotency-Key is still being processed; retry it shortly"),
    );
    expect(await notesTitled(title)).toBe(0);
  });

  it.each([
    ["empty", ""],
    ["a space inside", "a b"],
    ["256 characters", "k".repeat(256)],
    ["a non-ASCII character", "clé"],
    ["a tab inside", "a\tb"],
    ["two keys (two headers)", "a, b"],
  ])("answers 400 JSON for a key that is %s, and creates nothing", async (_case, key) => {
    const title = `bad key ${crypto.randomUUID()}`;
    // A non-ASCII value goes out as its UTF-8 bytes, as a client on the wire would send it.
    const response = await post(key, { title, content: "c" });
    expect(await jsonOf(response)).toEqual(BAD_KEY);
    expect(await notesTitled(title)).toBe(0);
  });

  it("accepts keys of 1 and 255 visible ASCII characters, quotes and punctuation included", async () => {
    const longest = `${crypto.randomUUID()}${"~".repeat(219)}`;
    expect(longest).toHaveLength(255);
    // The only one-character key of the suite.
    for (const key of ["!", `"${crypto.randomUUID()}"`, longest]) {
      const title = `edge key ${crypto.randomUUID()}`;
      expect(await answer(await post(key, { title, content: "c" }))).toMatchObject({ status: 201, replayed: null });
      expect(await notesTitled(title)).toBe(1);
    }
  });

  it("claims no key for a request whose body is refused", async () => {
    const key = newKey();
    const title = `after a 400 ${key}`;
    expect((await post(key, { title: "", content: "c" })).status).toBe(400);
    expect(await keyRows(key)).toEqual([]);
    expect((await post(key, { title, content: "c" })).status).toBe(201);
  });

  it("creates a new note for a key whose 24 hours have passed", async () => {
    const key = newKey();
    const body = { title: `expired ${key}`, content: "c" };
    const first = v.parse(Note, await (await post(key, body)).json());
    await env.DB.prepare("UPDATE idempotency_keys SET created_at = created_at - ? WHERE key = ?").bind(DAY, key).run();
    const second = await answer(await post(key, body));
    expect(second).toMatchObject({ status: 201, replayed: null });
    expect(v.parse(Note, JSON.parse(second.text)).id).toBeGreaterThan(first.id);
    expect(await notesTitled(body.title)).toBe(2);
    expect(await keyRows(key)).toHaveLength(1);
    expect(await answer(await post(key, body))).toEqual({ ...second, replayed: "true" });
  });

  it("keeps a key for 24 hours; the hourly cron deletes it after that", async () => {
    const [young, old] = [newKey(), newKey()];
    await post(young, { title: `young ${young}`, content: "c" });
    await post(old, { title: `old ${old}`, content: "c" });
    await env.DB.prepare("UPDATE idempotency_keys SET created_at = created_at - ? WHERE key = ?")
      .bind(DAY - 60_000, young)
      .run();
    await env.DB.prepare("UPDATE idempotency_keys SET created_at = created_at - ? WHERE key = ?").bind(DAY, old).run();
    await fireCron();
    expect(await keyRows(young)).toHaveLength(1);
    expect(await keyRows(old)).toEqual([]);
    // The notes themselves stay.
    expect(await notesTitled(`old ${old}`)).toBe(1);
  });

  it("stores exactly one note for 20 concurrent POSTs with one key; every answer is the same 201", async () => {
    const key = newKey();
    const body = { title: `burst ${key}`, content: "x".repeat(100_000) };
    const responses = await Promise.all(Array.from({ length: 20 }, () => post(key, body)));
    expect(tally(responses)).toEqual({ 201: 20 });
    const answers = await Promise.all(responses.map(answer));
    expect(answers.filter((a) => a.replayed === null)).toHaveLength(1);
    expect(answers.filter((a) => a.replayed === "true")).toHaveLength(19);
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(await notesTitled(body.title)).toBe(1);
    expect(await keyRows(key)).toHaveLength(1);
  });

  it("stores no note for 20 concurrent POSTs with one key and different bodies but the winner's", async () => {
    const key = newKey();
    const titles = Array.from({ length: 20 }, (_, i) => `race ${i} ${key}`);
    const responses = await Promise.all(titles.map((title) => post(key, { title, content: "c" })));
    expect(tally(responses)).toEqual({ 201: 1, 422: 19 });
    const counts = await Promise.all(titles.map(notesTitled));
    expect(counts.reduce((a, b) => a + b)).toBe(1);
  });
});

describe("POST /notes with Idempotency-Key and NOTES_AUTH=required", () => {
  async function user() {
    const email = await verifiedAccount();
    const { token } = await logIn(email);
    return { email, token, headers: bearer(token), id: (await storedUser(email))!.id };
  }
  const postAs = (headers: Record<string, string>, key: string, body: unknown) =>
    callWithEnv(REQUIRED, "POST", "/notes", body, { ...headers, "Idempotency-Key": key });

  it("keeps keys per user: the same key creates one note for each, and replays only to its owner", async () => {
    const [alice, bob] = [await user(), await user()];
    const key = newKey();
    const aliceFirst = await answer(await postAs(alice.headers, key, { title: `alice ${key}`, content: "a" }));
    const bobFirst = await answer(await postAs(bob.headers, key, { title: `bob ${key}`, content: "b" }));
    expect([aliceFirst.status, aliceFirst.replayed, bobFirst.status, bobFirst.replayed]).toEqual([
      201,
      null,
      201,
      null,
    ]);
    expect(await answer(await postAs(alice.headers, key, { title: `alice ${key}`, content: "a" }))).toEqual({
      ...aliceFirst,
      replayed: "true",
    });
    expect(await answer(await postAs(bob.headers, key, { title: `bob ${key}`, content: "b" }))).toEqual({
      ...bobFirst,
      replayed: "true",
    });
    expect(await jsonOf(await postAs(bob.headers, key, { title: `alice ${key}`, content: "a" }))).toEqual(REUSED);
    expect((await keyRows(key)).map((row) => row.user_id).sort()).toEqual([alice.id, bob.id].sort());
    // The public scope is another scope again.
    expect(await answer(await post(key, { title: `public ${key}`, content: "p" }))).toMatchObject({
      status: 201,
      replayed: null,
    });
  });

  it("answers 401 for an ended session and claims nothing", async () => {
    const alice = await user();
    expect((await call("POST", "/auth/logout", undefined, alice.headers)).status).toBe(204);
    const key = newKey();
    const response = await postAs(alice.headers, key, { title: `ended ${key}`, content: "c" });
    expect(await jsonOf(response)).toEqual(error(401, "Unauthorized"));
    expect(await keyRows(key)).toEqual([]);
    expect(await notesTitled(`ended ${key}`)).toBe(0);
  });

  it("stores exactly one note for 20 concurrent POSTs of one user with one key", async () => {
    const alice = await user();
    const key = newKey();
    const body = { title: `user burst ${key}`, content: "c" };
    const responses = await Promise.all(Array.from({ length: 20 }, () => postAs(alice.headers, key, body)));
    expect(tally(responses)).toEqual({ 201: 20 });
    const answers = await Promise.all(responses.map(answer));
    expect(answers.filter((a) => a.replayed === null)).toHaveLength(1);
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(await notesTitled(body.title)).toBe(1);
  });

  it("forgets a deleted account's keys with it", async () => {
    const alice = await user();
    const key = newKey();
    expect((await postAs(alice.headers, key, { title: `gone ${key}`, content: "c" })).status).toBe(201);
    expect((await call("DELETE", "/auth/account", { password: "correct horse battery" }, alice.headers)).status).toBe(
      204,
    );
    expect(await keyRows(key)).toEqual([]);
  });
});

describe("Idempotency-Key and CORS", () => {
  it("lets browsers of allowed origins send the key and read Idempotent-Replayed", async () => {
    const origin = "https://app.example";
    const cors = { CORS_ORIGINS: origin };
    const preflight = await callWithEnv(cors, "OPTIONS", "/notes", undefined, {
      Origin: origin,
      "Access-Control-Request-Method": "POST",
      "Access-Control-Request-Headers": "content-type, idempotency-key",
    });
    expect(preflight.headers.get("access-control-allow-headers")?.split(",")).toContain("Idempotency-Key");
    const key = newKey();
    const body = { title: `cors ${key}`, content: "c" };
    await callWithEnv(cors, "POST", "/notes", body, { Origin: origin, "Idempotency-Key": key });
    const replay = await callWithEnv(cors, "POST", "/notes", body, { Origin: origin, "Idempotency-Key": key });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.headers.get("access-control-expose-headers")?.split(",")).toContain("Idempotent-Replayed");
  });
});
