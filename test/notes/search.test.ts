import { applyD1Migrations } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { hc } from "hono/client";
import * as v from "valibot";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { AppType } from "../../src/index";
import { matchExpression } from "../../src/notes/search";
import { bearer, logIn, verifiedAccount } from "../support/accounts";
import { BASE, call, callWithEnv, JSON_TYPE, jsonOf, tally } from "../support/app";
import { error, Note } from "../support/notes";

/** GET /notes?q=…: full-text search over the notes' titles and contents. */

const Notes = v.array(Note);
type NoteJson = v.InferOutput<typeof Note>;

/**
 * A word no other note holds, so each test sees only its own notes (other tests share the database).
 * Letters only: digits or a dash would be words or separators of their own.
 */
function uniqueWord(): string {
  return [...crypto.getRandomValues(new Uint8Array(12))].map((byte) => String.fromCharCode(97 + (byte % 26))).join("");
}

async function create(title: string, content: string): Promise<NoteJson> {
  const response = await call("POST", "/notes", { title, content });
  expect(response.status).toBe(201);
  return v.parse(Note, await response.json());
}

const search = (q: string, extra = "") => call("GET", `/notes?q=${encodeURIComponent(q)}${extra}`);

/** The ids a search answers, after checking that it is a 200 JSON array of notes. */
async function found(response: Response | Promise<Response>): Promise<number[]> {
  const res = await response;
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe(JSON_TYPE);
  return v.parse(Notes, await res.json()).map((note) => note.id);
}

/** The target of a `Link: <…>; rel="next"` header, or null. */
function nextLink(response: Response): string | null {
  const link = response.headers.get("link");
  if (link === null) return null;
  const match = /^<([^>]+)>; rel="next"$/.exec(link);
  expect(match).not.toBeNull();
  return match![1]!;
}

describe("GET /notes?q=", () => {
  it("answers the matching notes as the same note JSON as GET /notes/{id}", async () => {
    const word = uniqueWord();
    const note = await create(`Groceries ${word}`, "milk, eggs");
    await create("Unrelated", "nothing to see");
    const response = await search(word);
    expect(response.status).toBe(200);
    const body = await response.text();
    const single = await (await call("GET", `/notes/${note.id}`)).text();
    expect(body).toBe(`[${single}]`);
  });

  it("finds words in the title or the content, every word required", async () => {
    const word = uniqueWord();
    const inTitle = await create(`${word} alpha`, "x");
    const inContent = await create("x", `beta ${word} alpha`);
    const onlyOne = await create("x", `${word} only`);
    expect((await found(search(word))).sort()).toEqual([inTitle.id, inContent.id, onlyOne.id].sort());
    expect((await found(search(`${word} alpha`))).sort()).toEqual([inTitle.id, inContent.id].sort());
    expect(await found(search(`${word} gamma`))).toEqual([]);
  });

  it("ranks the notes that match in their title first, then the newest first", async () => {
    const word = uniqueWord();
    const inContent = await create("Plans", `We talked about the ${word} today.`);
    const olderInTitle = await create(`The ${word}`, "Some text.");
    const manyTimesInContent = await create("Notes", `${word} ${word} ${word} ${word} ${word}`);
    const newerInTitle = await create(`${word} again`, `and ${word} in the content too`);
    expect(await found(search(word))).toEqual([newerInTitle.id, olderInTitle.id, manyTimesInContent.id, inContent.id]);
  });

  it("ignores case and accents", async () => {
    const word = uniqueWord();
    const note = await create(`Crème Brûlée ${word}`, "Ça va, NAÏVE café");
    for (const q of [
      `creme brulee ${word}`,
      `CRÈME ${word}`,
      `ca va naive cafe ${word}`,
      `${word.toUpperCase()} BRULÉE`,
    ]) {
      expect(await found(search(q))).toEqual([note.id]);
    }
  });

  it("matches the last word as a prefix, and only the last", async () => {
    const word = uniqueWord();
    const note = await create(`Budget ${word}`, "quarterly figures");
    expect(await found(search(`${word} budg`))).toEqual([note.id]);
    expect(await found(search(`${word} quart`))).toEqual([note.id]);
    expect(await found(search(`budg ${word}`))).toEqual([]);
    expect(await found(search(`${word.slice(0, 6)}`))).toContain(note.id);
  });

  it("matches a quoted phrase as a phrase", async () => {
    const word = uniqueWord();
    const phrase = await create(word, "the quarterly budget meeting");
    const reversed = await create(word, "the budget was quarterly");
    const apart = await create(word, "quarterly numbers and budget");
    expect((await found(search(`${word} quarterly budget`))).sort()).toEqual([phrase.id, reversed.id, apart.id].sort());
    expect(await found(search(`${word} "quarterly budget"`))).toEqual([phrase.id]);
    // A phrase is never a prefix, and an unclosed quote runs to the end.
    expect(await found(search(`${word} "quarterly budg"`))).toEqual([]);
    expect(await found(search(`${word} "budget meeting`))).toEqual([phrase.id]);
  });

  it("takes FTS5 operators as plain words", async () => {
    const word = uniqueWord();
    const withOr = await create(word, "tea OR coffee");
    const teaOnly = await create(word, "tea");
    const near = await create(word, "near the station");
    // What `title:colon` would find as a column filter, and what it finds as text.
    const asFilter = await create("colon", word);
    const asText = await create("x", `${word} title: colon`);
    // OR is a word that must be there, not an alternative.
    expect(await found(search(`${word} tea OR coffee`))).toEqual([withOr.id]);
    // A minus does not exclude: "-tea" is the word tea.
    expect((await found(search(`${word} -tea`))).sort()).toEqual([withOr.id, teaOnly.id].sort());
    expect(await found(search(`${word} NEAR( station`))).toEqual([near.id]);
    // "title:" is not a column filter: it is the words title and colon.
    expect(await found(search(`${word} title:colon`))).toEqual([asText.id]);
    expect(asFilter.id).not.toBe(asText.id);
    expect(await found(search(`content:${word}`))).toEqual([]);
  });

  it.each([
    ['a lone "', '"'],
    ["*", "*"],
    ["NEAR(", "NEAR("],
    ["-", "-"],
    ["OR", "OR"],
    ["AND NOT", "AND NOT"],
    [":", ":"],
    ["^", "^"],
    ["a column filter", "{title content}: x"],
    ["only punctuation", "!@#$%^&*()_+-=[]{};':\",./<>?\\|`~"],
    ["quotes inside words", 'a"b""c"'],
    ["control characters", "\u0000\u0001\u007f"],
    ["12 words", Array.from({ length: 12 }, (_, i) => `word${i}`).join(" ")],
  ])("answers 200 with a JSON array, never a 500, for %s", async (_case, q) => {
    await found(search(q));
  });

  it("answers 200 for a lone surrogate, as \\ud800 or as its UTF-8-style bytes (%ED%A0%80)", async () => {
    // A URL cannot carry half of a surrogate pair: the URL parser sends \ud800 as U+FFFD.
    await found(call("GET", "/notes?q=\ud800"));
    await found(call("GET", "/notes?q=%ED%A0%80"));
    await found(call("GET", "/notes?q=budget%ED%A0%80%"));
  });

  it.each([
    ["empty", "/notes?q="],
    ["only white space", "/notes?q=%20%20%09"],
  ])("answers 400 JSON for a q that is %s", async (_case, path) => {
    expect(await jsonOf(await call("GET", path))).toEqual(error(400, "q must not be empty"));
  });

  it("takes a q of 200 characters and 12 words, and answers 400 JSON for one longer or with more words", async () => {
    const word = uniqueWord();
    const note = await create(`${word} bounded`, "x");
    // 200 characters: the word, then spaces and one emoji, which counts once.
    const longest = `${word} bounded${" ".repeat(200 - word.length - 9)}😀`;
    expect([...longest]).toHaveLength(200);
    expect(await found(search(longest))).toEqual([note.id]);
    expect(await jsonOf(await search(`${longest} `))).toEqual(error(400, "q must be at most 200 characters"));

    const eleven = Array.from({ length: 11 }, () => "bounded").join(" ");
    expect(await found(search(`${word} ${eleven}`))).toEqual([note.id]);
    const tooMany = error(400, "q must hold at most 12 words (a quoted phrase counts each of its words)");
    expect(await jsonOf(await search(`${word} ${eleven} bounded`))).toEqual(tooMany);
    // Inside a phrase or joined by punctuation, each word counts: FTS5 reads one list of matches per word.
    expect(await jsonOf(await search(`${word} "${eleven} bounded"`))).toEqual(tooMany);
    expect(await jsonOf(await search(`${word}-${eleven.replaceAll(" ", "-")}-bounded`))).toEqual(tooMany);
    // What holds no word is no word: only punctuation costs nothing.
    expect(await found(search(`${word} ${eleven} - * "" !?`))).toEqual([note.id]);
  });

  it.each([
    ["/notes?q=x&after=3&limit=5", "after cannot be combined with q; search pages use offset"],
    ["/notes?offset=2", "offset is only allowed together with q"],
    ["/notes?limit=2&offset=2", "offset is only allowed together with q"],
    ["/notes?q=x&offset=-1", "offset must be an integer of at least 0"],
    ["/notes?q=x&offset=abc", "offset must be an integer of at least 0"],
    ["/notes?q=x&limit=0", "limit must be an integer from 1 to 100"],
    ["/notes?q=x&limit=101", "limit must be an integer from 1 to 100"],
  ])("answers 400 JSON for %s", async (path, message) => {
    expect(await jsonOf(await call("GET", path))).toEqual(error(400, message));
  });

  it("pages with limit and a Link to the next page, in rank order, each note once", async () => {
    const word = uniqueWord();
    // Title matches first, each kind newest first: the order is known.
    const created: NoteJson[] = [];
    for (const inTitle of [false, true, false, true, true])
      created.push(await create(inTitle ? word : "x", inTitle ? "x" : word));
    const ranked = [
      ...created.filter((note) => note.title === word).reverse(),
      ...created.filter((note) => note.title !== word).reverse(),
    ];

    const pages: number[][] = [];
    let path: string | null = `/notes?q=${word}&limit=2`;
    while (path !== null) {
      const response = await call("GET", path);
      pages.push(await found(response));
      path = nextLink(response);
      if (pages.length === 1) expect(path).toBe(`/notes?q=${word}&limit=2&offset=2`);
    }
    expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
    expect(pages.flat()).toEqual(ranked.map((note) => note.id));
  });

  it("answers at most 20 notes without limit, with a Link to the rest", async () => {
    const word = uniqueWord();
    for (let i = 0; i < 22; i++) await create(word, `note ${i}`);
    const response = await search(word);
    expect(await found(response)).toHaveLength(20);
    expect(nextLink(response)).toBe(`/notes?q=${word}&limit=20&offset=20`);
    const rest = await call("GET", nextLink(response)!);
    expect(await found(rest)).toHaveLength(2);
    expect(rest.headers.get("link")).toBeNull();
  });

  it("encodes q in the Link so that following it searches the same text", async () => {
    const word = uniqueWord();
    await create(`${word} café & co`, "x");
    await create(`${word} café & co`, "y");
    const q = `${word} "café & co"`;
    const response = await search(q, "&limit=1");
    expect(await found(response)).toHaveLength(1);
    expect(nextLink(response)).toBe(`/notes?q=${encodeURIComponent(q)}&limit=1&offset=1`);
    expect(await found(call("GET", nextLink(response)!))).toHaveLength(1);
  });

  it("cuts a page of large notes by bytes, like the list, and carries on from there", async () => {
    const word = uniqueWord();
    const big = "x ".repeat(300_000); // 600,000 bytes each: two fit in a page's 1,500,000 bytes, three do not
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) ids.unshift((await create(`${word}`, big)).id);
    const first = await search(word, "&limit=10");
    expect(await found(first)).toEqual(ids.slice(0, 2));
    expect(nextLink(first)).toBe(`/notes?q=${word}&limit=10&offset=2`);
    expect(await found(call("GET", nextLink(first)!))).toEqual(ids.slice(2));
  });

  it("keeps the index exact through edits and deletions", async () => {
    const [oldWord, newWord] = [uniqueWord(), uniqueWord()];
    const note = await create(`${oldWord} title`, `${oldWord} content`);
    expect((await call("PATCH", `/notes/${note.id}`, { title: `${newWord} title` })).status).toBe(200);
    expect(await found(search(oldWord))).toEqual([note.id]);
    expect(await found(search(`${newWord} title`))).toEqual([note.id]);
    expect((await call("PATCH", `/notes/${note.id}`, { content: "other" })).status).toBe(200);
    expect(await found(search(oldWord))).toEqual([]);
    expect((await call("DELETE", `/notes/${note.id}`)).status).toBe(204);
    expect(await found(search(newWord))).toEqual([]);
    // FTS5's own check of an external-content index against its table: fails with SQLITE_CORRUPT otherwise.
    await env.DB.prepare("INSERT INTO notes_fts (notes_fts, rank) VALUES ('integrity-check', 1)").run();
  });
});

describe("GET /notes?q= with NOTES_AUTH=required", () => {
  const REQUIRED = { NOTES_AUTH: "required" };

  it("finds only the caller's notes, and answers 401 without a token", async () => {
    const word = uniqueWord();
    const [alice, bob] = [
      bearer((await logIn(await verifiedAccount())).token),
      bearer((await logIn(await verifiedAccount())).token),
    ];
    const post = async (headers: Record<string, string>, title: string) =>
      v.parse(Note, await (await callWithEnv(REQUIRED, "POST", "/notes", { title, content: "x" }, headers)).json());
    const alicesNote = await post(alice, `${word} alice`);
    const bobsNote = await post(bob, `${word} bob`);
    await create(`${word} public`, "x");
    const searchAs = (headers: Record<string, string>) =>
      callWithEnv(REQUIRED, "GET", `/notes?q=${word}`, undefined, headers);
    expect(await found(searchAs(alice))).toEqual([alicesNote.id]);
    expect(await found(searchAs(bob))).toEqual([bobsNote.id]);
    expect(await jsonOf(await searchAs({}))).toEqual(error(401, "Unauthorized"));
  });

  // Corpus-wide statistics (bm25 weighs a word by how many notes of every account hold it) turned the order
  // of one's own results into a probe of everyone else's notes: here Bob's notes would swap Alice's two.
  it("keeps the order of one account's results whatever another account's notes hold", async () => {
    const [rare, flooded] = [uniqueWord(), uniqueWord()];
    const [alice, bob] = [
      bearer((await logIn(await verifiedAccount())).token),
      bearer((await logIn(await verifiedAccount())).token),
    ];
    const post = async (headers: Record<string, string>, title: string, content: string) =>
      v.parse(Note, await (await callWithEnv(REQUIRED, "POST", "/notes", { title, content }, headers)).json());
    // Mirror images: the same lengths, each word once in a title and once in a content.
    const floodedInTitle = await post(alice, flooded, rare);
    const rareInTitle = await post(alice, rare, flooded);
    const aliceSearches = async () =>
      found(callWithEnv(REQUIRED, "GET", `/notes?q=${flooded} ${rare}`, undefined, alice));
    const before = await aliceSearches();
    expect([...before].sort()).toEqual([floodedInTitle.id, rareInTitle.id].sort());
    for (let i = 0; i < 25; i++) await post(bob, `${flooded} ${i}`, flooded);
    expect(await aliceSearches()).toEqual(before);
  });
});

describe("GET /notes?q= per-client limit", () => {
  const limited = { RATE_LIMITS: "on" };
  const client = () => ({ "CF-Connecting-IP": `198.51.100.${Math.floor(Math.random() * 250)}-${crypto.randomUUID()}` });

  it("answers 429 JSON with Retry-After after 60 searches in a minute, per client, and leaves lists and reads alone", async () => {
    const ip = client();
    const searches = await Promise.all(
      Array.from({ length: 60 }, () => callWithEnv(limited, "GET", `/notes?q=${uniqueWord()}`, undefined, ip)),
    );
    expect(tally(searches)).toEqual({ 200: 60 });
    const over = await callWithEnv(limited, "GET", `/notes?q=${uniqueWord()}`, undefined, ip);
    expect(await jsonOf(over)).toEqual(error(429, "Too many searches"));
    expect(over.headers.get("retry-after")).toBe("60");
    // A bad q counts too (it is refused after the limit), a list or a read does not, nor another client's search.
    expect((await callWithEnv(limited, "GET", "/notes?q=", undefined, ip)).status).toBe(429);
    expect((await callWithEnv(limited, "GET", "/notes?limit=1", undefined, ip)).status).toBe(200);
    expect((await callWithEnv(limited, "GET", "/notes/1", undefined, ip)).status).not.toBe(429);
    expect((await callWithEnv(limited, "GET", `/notes?q=${uniqueWord()}`, undefined, client())).status).toBe(200);
  });

  it("is off with RATE_LIMITS=off", async () => {
    const ip = client();
    const searches = await Promise.all(
      Array.from({ length: 70 }, () =>
        callWithEnv({ RATE_LIMITS: "off" }, "GET", `/notes?q=${uniqueWord()}`, undefined, ip),
      ),
    );
    expect(tally(searches)).toEqual({ 200: 70 });
  });
});

describe("the search migration", () => {
  it("indexes the notes written before it", async () => {
    const db = env.SEARCH_DB;
    const migrations = env.TEST_MIGRATIONS;
    const search = migrations.findIndex((migration) => migration.name.includes("notes_search"));
    expect(search).toBeGreaterThan(0);
    await applyD1Migrations(db, migrations.slice(0, search));
    await db
      .prepare("INSERT INTO notes (title, content, created_at) VALUES ('Older budget', 'written before search', 0)")
      .run();
    await applyD1Migrations(db, migrations);
    expect(await found(callWithEnv({ DB: db }, "GET", "/notes?q=budg"))).toEqual([1]);
    await db.prepare("INSERT INTO notes_fts (notes_fts, rank) VALUES ('integrity-check', 1)").run();
  });
});

describe("matchExpression", () => {
  it.each([
    ["budg", '"budg"*'],
    ["quarterly budg", '"quarterly" "budg"*'],
    ['"quarterly budget"', '"quarterly budget"'],
    ['say "hi there" now', '"say" "hi there" "now"*'],
    ['"open', '"open"'],
    ["NEAR( a OR b", '"NEAR(" "a" "OR" "b"*'],
    ["title:x -y ^z", '"title:x" "-y" "^z"*'],
    ['a"b', '"a" "b"'],
    ["\ud800", '"\ufffd"*'],
    [" \u0000\t ", '""'],
  ])("turns %j into %j", (q, expression) => {
    expect(matchExpression(q)).toBe(expression);
  });
});

describe("typed client (hc<AppType>)", () => {
  it("searches with q, limit and offset, typed", async () => {
    const client = hc<AppType>(BASE, {
      fetch: (input: RequestInfo | URL, init?: RequestInit) => exports.default.fetch(new Request(input, init)),
    });
    const word = uniqueWord();
    const note = await create(`Typed ${word}`, "x");
    expectTypeOf<Parameters<typeof client.notes.$get>[0]["query"]>().toEqualTypeOf<{
      limit?: string | undefined;
      after?: string | undefined;
      q?: string | undefined;
      shared?: "true" | "false" | undefined;
      offset?: string | undefined;
    }>();
    const response = await client.notes.$get({ query: { q: word, limit: "5", offset: "0" } });
    expect(response.status).toBe(200);
    expect(v.parse(Notes, await response.json())).toEqual([note]);
  });
});
