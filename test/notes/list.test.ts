import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "../../src/lib/log";
import { rowsOf } from "../../src/db/compiled";
import { LIST_ABORTED, listNotes } from "../../src/notes/list";
import { EVERY_ID, ownList } from "../../src/notes/list-queries";
import { LIST_CHUNK_BYTES } from "../../src/notes/sql";
import { call, callWithEnv, JSON_TYPE, jsonOf } from "../support/app";

/** A note as the API renders it. */
interface NoteJson {
  id: number;
  title: string;
  content: string;
  created_at: string;
}

/** A note to seed with plain SQL; created_at in epoch milliseconds, as D1 holds it. */
interface Seed {
  title: string;
  content: string;
  created_at: number;
  user_id?: number | null;
}

const INSERT = "INSERT INTO notes (title, content, created_at, user_id) VALUES (?, ?, ?, ?)";

const BASE_TIME = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

/** What the list's size estimate adds to a note's title and content (see NOTE_JSON_OVERHEAD). */
const OVERHEAD = 88;

/** A fresh title prefix per test: other test files share env.DB, so a test compares only its own rows. */
function marker(prefix: string): string {
  return `${prefix}-${crypto.randomUUID()}`;
}

function seeds(mark: string, count: number, content: (i: number) => string = (i) => `content ${i}`): Seed[] {
  return Array.from({ length: count }, (_, i) => ({
    title: `${mark} ${String(i).padStart(6, "0")}`,
    content: content(i),
    created_at: BASE_TIME + i,
  }));
}

/** One prepared INSERT per note, all in one D1 batch (one transaction). */
async function seedOneByOne(db: D1Database, rows: Seed[]): Promise<void> {
  const insert = db.prepare(INSERT);
  await db.batch(rows.map((row) => insert.bind(row.title, row.content, row.created_at, row.user_id ?? null)));
}

/**
 * Many notes fast: multi-row INSERTs of 33 notes (99 bound parameters; D1 allows 100 per statement),
 * 100 statements per D1 batch.
 */
async function seedMany(db: D1Database, rows: Seed[]): Promise<void> {
  const ROWS_PER_STATEMENT = 33;
  const STATEMENTS_PER_BATCH = 100;
  const sql = (n: number) =>
    `INSERT INTO notes (title, content, created_at) VALUES ${Array(n).fill("(?, ?, ?)").join(", ")}`;
  const full = db.prepare(sql(ROWS_PER_STATEMENT));
  let batch: D1PreparedStatement[] = [];
  for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
    const part = rows.slice(start, start + ROWS_PER_STATEMENT);
    const params = part.flatMap((row) => [row.title, row.content, row.created_at]);
    batch.push((part.length === ROWS_PER_STATEMENT ? full : db.prepare(sql(part.length))).bind(...params));
    if (batch.length === STATEMENTS_PER_BATCH) {
      await db.batch(batch);
      batch = [];
    }
  }
  if (batch.length > 0) await db.batch(batch);
}

/** What GET /notes must show for the seeded rows: their ids from D1, the rest as seeded. */
async function expectedNotes(db: D1Database, mark: string, rows: Seed[]): Promise<NoteJson[]> {
  const { results } = await db
    .prepare("SELECT id, title FROM notes WHERE title LIKE ? ORDER BY id")
    .bind(`${mark} %`)
    .all<{ id: number; title: string }>();
  expect(results).toHaveLength(rows.length);
  return results.map((stored, i) => {
    const row = rows[i]!;
    expect(stored.title).toBe(row.title);
    return {
      id: stored.id,
      title: row.title,
      content: row.content,
      created_at: new Date(row.created_at).toISOString(),
    };
  });
}

/** The body the list had before SQLite wrote it: JSON.stringify of each note, in id order. */
const stringified = (list: NoteJson[]) => `[${list.map((note) => JSON.stringify(note)).join(",")}]`;

/** The body of a streamed list piece by piece, when its chunks end after the first `ends[i]` notes. */
function piecesOf(list: NoteJson[], ends: number[]): string[] {
  const bounds = [0, ...ends, list.length];
  return bounds.slice(1).map((end, i) => {
    const items = list
      .slice(bounds[i], end)
      .map((note) => JSON.stringify(note))
      .join(",");
    return `${i === 0 ? "[" : ","}${items}${end === list.length ? "]" : ""}`;
  });
}

/** GET /notes as a client sees it: 200, application/json, and a body that is one JSON array. */
async function readList(response: Response | Promise<Response>): Promise<NoteJson[]> {
  const res = await response;
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe(JSON_TYPE);
  const list = JSON.parse(await res.text()) as unknown;
  expect(Array.isArray(list)).toBe(true);
  return list as NoteJson[];
}

function expectStrictlyAscending(list: NoteJson[]): void {
  for (let i = 1; i < list.length; i++) {
    if (!(list[i]!.id > list[i - 1]!.id))
      throw new Error(`ids not strictly ascending at ${i}: ${list[i - 1]!.id}, ${list[i]!.id}`);
  }
}

/** The body as the app hands it over, piece by piece (callWithEnv returns the app's own stream). */
async function readPieces(response: Response): Promise<string[]> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const pieces: string[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return pieces;
    pieces.push(decoder.decode(value));
  }
}

/** Content that makes a note's size estimate exactly `size` bytes (ASCII title and content). */
const contentForSize = (title: string, size: number) => "c".repeat(size - OVERHEAD - title.length);

afterEach(() => {
  vi.restoreAllMocks();
});

interface NoteJson {
  id: number;
  title: string;
  content: string;
  created_at: string;
}

describe("GET /notes, streamed in chunks", () => {
  it("lists notes across several chunk boundaries exactly, in order, once each", async () => {
    const mark = marker("chunks");
    // About a fifth of a chunk each, with small notes between: five or more chunks.
    const rows = seeds(mark, 40, (i) => (i % 2 ? `small ${i}` : String(i % 10).repeat(LIST_CHUNK_BYTES / 5)));
    await seedOneByOne(env.DB, rows);
    try {
      const expected = await expectedNotes(env.DB, mark, rows);

      const list = await readList(call("GET", "/notes"));
      expectStrictlyAscending(list);
      for (const note of list) expect(Object.keys(note)).toEqual(["id", "title", "content", "created_at"]);
      expect(list.filter((note) => note.title.startsWith(`${mark} `))).toEqual(expected);
    } finally {
      await env.DB.prepare("DELETE FROM notes WHERE title LIKE ?").bind(`${mark} %`).run();
    }
  });

  it("lists 100,000 notes of 1 KiB each", { timeout: 120_000 }, async () => {
    const COUNT = 100_000;
    const mark = marker("bulk");
    const filler = "The quick brown fox jumps over the lazy dog. ".repeat(23); // 1035 characters
    const rows = seeds(mark, COUNT, (i) => `${String(i).padStart(6, "0")} ${filler}`.slice(0, 1024));
    expect(rows[0]!.content).toHaveLength(1024);

    try {
      let started = performance.now();
      await seedMany(env.DB, rows);
      const seedMs = performance.now() - started;
      const [first, last] = [rows[0]!, rows[COUNT - 1]!];
      const ids = await env.DB.prepare(
        "SELECT MIN(id) AS first, MAX(id) AS last, COUNT(*) AS n FROM notes WHERE title LIKE ?",
      )
        .bind(`${mark} %`)
        .first<{ first: number; last: number; n: number }>();
      expect(ids!.n).toBe(COUNT);

      started = performance.now();
      const list = await readList(call("GET", "/notes"));
      const listMs = performance.now() - started;

      expectStrictlyAscending(list);
      const mine = list.filter((note) => note.title.startsWith(`${mark} `));
      expect(mine).toHaveLength(COUNT);
      expect(mine[0]).toEqual({
        id: ids!.first,
        title: first.title,
        content: first.content,
        created_at: new Date(first.created_at).toISOString(),
      });
      expect(mine[COUNT - 1]).toEqual({
        id: ids!.last,
        title: last.title,
        content: last.content,
        created_at: new Date(last.created_at).toISOString(),
      });
      // Seeded in order in one transaction per batch, so the titles follow the ids.
      mine.forEach((note, i) => {
        if (note.title !== rows[i]!.title) throw new Error(`note ${i} is ${note.title}, expected ${rows[i]!.title}`);
      });
      console.log(
        `100k notes: seeding ${Math.round(seedMs)} ms, listing (request to parsed body) ${Math.round(listMs)} ms`,
      );
    } finally {
      await env.DB.prepare("DELETE FROM notes WHERE title LIKE ?").bind(`${mark} %`).run();
    }
  });

  it("answers 500 JSON through onError when the first chunk fails", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "error").mockImplementation((line: unknown) => lines.push(String(line)));
    const response = await callWithEnv({ DB: env.EMPTY_DB }, "GET", "/notes");
    expect(response.status).toBe(500);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    expect(await response.json()).toEqual({ error: "Internal server error" });
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      event: "unhandled_error",
      errorMessage: expect.stringMatching(/no such table: notes/),
    });
  });
});

/**
 * LIST_DB is this file's own database: it holds exactly the notes a test puts there, and its table can be
 * renamed away while a response is being read, which makes the next chunk's query fail for real.
 */
describe("GET /notes on a database of its own", () => {
  const db = () => env.LIST_DB;
  const list = (query = "") => callWithEnv({ DB: env.LIST_DB }, "GET", `/notes${query}`);
  const getNote = (id: number) => callWithEnv({ DB: env.LIST_DB }, "GET", `/notes/${id}`);
  const moveTableAway = () => db().prepare("ALTER TABLE notes RENAME TO notes_away").run();
  const moveTableBack = () => db().prepare("ALTER TABLE notes_away RENAME TO notes").run();

  /** The body read only after the table is gone: complete only if it all came from the first query. */
  async function readWithoutTable(response: Response): Promise<string> {
    await moveTableAway();
    try {
      return (await readPieces(response)).join("");
    } finally {
      await moveTableBack();
    }
  }

  beforeAll(async () => {
    await applyD1Migrations(env.LIST_DB, env.TEST_MIGRATIONS);
  });
  beforeEach(async () => {
    await db().prepare("DELETE FROM notes").run();
  });

  it("answers exactly [] for an empty table", async () => {
    const response = await list();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    expect(await response.text()).toBe("[]");
  });

  describe("writes exactly the JSON that JSON.stringify wrote before SQLite built it", () => {
    const CONTROL = Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).join("");
    const texts = [
      "",
      'quotes " and \\ backslashes \\" and a slash /',
      `every control character: ${CONTROL} and DEL \u007f`,
      "line\nbreaks\r\nand\ttabs\bbackspace\fform feed",
      "Grüße, ça va? Ελληνικά, русский, 中文, 日本語, עברית, العربية",
      "emoji 😀 👩‍👩‍👧‍👦 🇸🇪 and astral 𝄞 𠜎 \u{10ffff}",
      "line and paragraph separators \u2028 \u2029, BOM \ufeff, noncharacter \uffff",
      "<script>alert('x')</script> & </notes>",
      "9007199254740993",
      "null",
      '{"looks":"like JSON"}',
    ];
    const times = [
      Date.UTC(2026, 0, 2, 3, 4, 5, 678),
      Date.UTC(2026, 0, 2, 3, 4, 5, 0), // .000
      Date.UTC(2026, 11, 31, 23, 59, 59, 999), // the last millisecond of a year
      Date.UTC(2028, 1, 29, 12, 0, 0, 1), // a leap day
      0, // the epoch
      1, // .001
      -1, // before 1970
      Date.UTC(1969, 6, 20, 20, 17, 40, 5),
      Date.UTC(1900, 0, 1, 0, 0, 0, 0),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999), // the last millisecond toISOString writes with 4 digits
      Date.UTC(2000, 1, 29, 0, 0, 0, 10),
      1_767_323_045_677,
    ];
    // Every text as title and as content, and every time, over this many notes.
    const rows: Seed[] = [
      ...texts.map((text, i) => ({
        title: text,
        content: texts[(i + 1) % texts.length]!,
        created_at: times[i % times.length]!,
      })),
      ...texts.map((text, i) => ({ title: `title ${i}`, content: text, created_at: times[(i + 5) % times.length]! })),
      ...times.map((created_at, i) => ({ title: `time ${i}`, content: String(created_at), created_at })),
    ];
    // A sample of other times across 1970..9999, and the milliseconds around a second.
    for (let i = 0; i < 200; i++) {
      const created_at = Math.floor(Math.random() * Date.UTC(9999, 11, 31)) + (i % 3) - 1;
      rows.push({ title: `random time ${i}`, content: "", created_at: Math.max(0, created_at) });
    }

    async function seeded(): Promise<NoteJson[]> {
      await seedOneByOne(db(), rows);
      const { results } = await db().prepare("SELECT id FROM notes ORDER BY id").all<{ id: number }>();
      expect(results).toHaveLength(rows.length);
      return results.map(({ id }, i) => {
        const row = rows[i]!;
        return { id, title: row.title, content: row.content, created_at: new Date(row.created_at).toISOString() };
      });
    }

    it("in the whole list", async () => {
      const expected = await seeded();
      expect(await (await list()).text()).toBe(stringified(expected));
    });

    it("in a page", async () => {
      const expected = await seeded();
      const response = await list(`?limit=7&after=${expected[2]!.id}`);
      expect(response.headers.get("content-type")).toBe(JSON_TYPE);
      expect(response.headers.get("link")).toBe(`</notes?limit=7&after=${expected[9]!.id}>; rel="next"`);
      expect(await response.text()).toBe(stringified(expected.slice(3, 10)));
    });

    it("for a single note", async () => {
      const expected = await seeded();
      for (const note of expected.slice(0, texts.length * 2 + times.length)) {
        const response = await getNote(note.id);
        expect(response.headers.get("content-type")).toBe(JSON_TYPE);
        expect(await response.text()).toBe(JSON.stringify(note));
      }
    });

    it("for a created and an updated note", async () => {
      const send = (method: string, path: string, body: unknown) =>
        callWithEnv({ DB: env.LIST_DB }, method, path, body);
      const stored = async (id: number) =>
        (await db()
          .prepare("SELECT id, title, content, created_at FROM notes WHERE id = ?")
          .bind(id)
          .first<Seed & { id: number }>())!;
      const asJson = (row: Seed & { id: number }) =>
        JSON.stringify({
          id: row.id,
          title: row.title,
          content: row.content,
          created_at: new Date(row.created_at).toISOString(),
        });
      // Titles are at most 200 characters and never blank, so these go into the content, and the title takes
      // the shorter ones.
      for (const [i, text] of texts.entries()) {
        const title = `${text.slice(0, 150)} title ${i}`;
        const created = await send("POST", "/notes", { title, content: text });
        expect(created.status).toBe(201);
        expect(created.headers.get("content-type")).toBe(JSON_TYPE);
        const { id } = JSON.parse(await created.clone().text()) as NoteJson;
        expect(await created.text()).toBe(asJson(await stored(id)));

        const other = texts[(i + 3) % texts.length]!;
        for (const change of [
          { content: other },
          { title: `${other.slice(0, 150)} again` },
          { title: "both", content: text },
          {},
        ]) {
          const updated = await send("PATCH", `/notes/${id}`, change);
          expect(updated.status).toBe(200);
          expect(updated.headers.get("content-type")).toBe(JSON_TYPE);
          expect(await updated.text()).toBe(asJson(await stored(id)));
        }
      }
    });
  });

  it("sends a list shorter than one chunk from one query: the body is complete without the table", async () => {
    const mark = marker("one");
    const rows = seeds(mark, 999);
    await seedOneByOne(db(), rows);
    const expected = await expectedNotes(db(), mark, rows);

    expect(await readWithoutTable(await list())).toBe(stringified(expected));
  });

  it("sends a list of exactly one chunk's size from one query too", async () => {
    const mark = marker("full");
    // Ten notes of a tenth of the chunk each: the last one ends exactly at the budget.
    const rows = seeds(mark, 10).map((row) => ({ ...row, content: contentForSize(row.title, LIST_CHUNK_BYTES / 10) }));
    await seedOneByOne(db(), rows);
    const expected = await expectedNotes(db(), mark, rows);

    expect(await readWithoutTable(await list())).toBe(stringified(expected));
  });

  it("starts a second chunk for one byte more", async () => {
    const mark = marker("over");
    const rows = seeds(mark, 10).map((row, i) => ({
      ...row,
      content: contentForSize(row.title, LIST_CHUNK_BYTES / 10 + (i === 9 ? 1 : 0)),
    }));
    await seedOneByOne(db(), rows);
    const expected = await expectedNotes(db(), mark, rows);

    const pieces = await readPieces(await list());
    expect(pieces).toEqual(piecesOf(expected, [9]));
  });

  it("sends one piece per chunk, each query continuing after the last id sent", async () => {
    const mark = marker("pieces");
    // Three notes fill a chunk: three chunks of three, then the tenth note alone.
    const rows = seeds(mark, 10).map((row) => ({ ...row, content: contentForSize(row.title, LIST_CHUNK_BYTES / 3) }));
    await seedOneByOne(db(), rows);
    const expected = await expectedNotes(db(), mark, rows);

    const pieces = await readPieces(await list());
    expect(pieces).toEqual(piecesOf(expected, [3, 6, 9]));
  });

  it("sends large notes with at most the small notes that still fit, one chunk per piece", async () => {
    const mark = marker("large");
    // Notes of 1 MiB (the body limit) among small ones: a chunk is a large note with at most the small ones
    // around it that still fit, so each piece stays near the budget.
    const MiB = 1024 * 1024;
    const rows = seeds(mark, 9, (i) => (i % 3 === 1 ? "small" : String(i).repeat(MiB)));
    await seedOneByOne(db(), rows);
    const expected = await expectedNotes(db(), mark, rows);

    const pieces = await readPieces(await list());
    expect(pieces.length).toBeGreaterThanOrEqual(6);
    for (const piece of pieces) expect(piece.length).toBeLessThan(LIST_CHUNK_BYTES);
    expect(pieces.join("")).toBe(stringified(expected));
  });

  it("finds exactly how many notes fit when the first notes are larger than the average", async () => {
    const mark = marker("uneven");
    // Four notes of 0.4 chunk, then thirty of 0.01: as many as fit on average (17) would not fit, exactly
    // two do. Then two more large ones, two small ones (as many as the large ones' size says), the rest.
    const rows = seeds(mark, 34).map((row, i) => ({
      ...row,
      content: contentForSize(row.title, (LIST_CHUNK_BYTES * (i < 4 ? 40 : 1)) / 100),
    }));
    await seedOneByOne(db(), rows);
    const expected = await expectedNotes(db(), mark, rows);

    const pieces = await readPieces(await list());
    expect(pieces).toEqual(piecesOf(expected, [2, 4, 6]));
  });

  it("builds a chunk again in smaller pieces when its JSON is too long for D1 (SQLITE_TOOBIG)", async () => {
    const mark = marker("escapes");
    // Control characters take 6 bytes each in JSON (\u0001): three notes fit a chunk by their stored size,
    // but their JSON (about 9 MB) is over the longest string SQLite allows here (about 8 MB; 2 MB on D1).
    const rows = seeds(mark, 3).map((row) => ({
      ...row,
      content: "\u0001".repeat(LIST_CHUNK_BYTES / 3 - OVERHEAD - row.title.length),
    }));
    await seedOneByOne(db(), rows);
    const expected = await expectedNotes(db(), mark, rows);
    const query = ownList.chunkQuery(drizzle(db()), undefined, Date.now(), {
      ...EVERY_ID,
      rows: 100,
      budget: LIST_CHUNK_BYTES,
    });
    const failure = await rowsOf(query).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(String((failure as Error | undefined)?.cause)).toMatch(/string or blob too big: SQLITE_TOOBIG/);

    const response = await list();
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(stringified(expected));
  });

  it("streams a page of large notes in chunks, with its Link header before the body", async () => {
    const mark = marker("page");
    const rows = seeds(mark, 5, (i) => String(i).repeat(LIST_CHUNK_BYTES / 2));
    await seedOneByOne(db(), rows);
    const expected = await expectedNotes(db(), mark, rows);

    const response = await list(`?limit=3&after=${expected[0]!.id}`);
    expect(response.headers.get("link")).toBe(`</notes?limit=3&after=${expected[3]!.id}>; rel="next"`);
    const pieces = await readPieces(response);
    expect(pieces.length).toBeGreaterThanOrEqual(2);
    expect(pieces.join("")).toBe(stringified(expected.slice(1, 4)));

    const last = await list(`?limit=3&after=${expected[3]!.id}`);
    expect(last.headers.get("link")).toBeNull();
    expect(await last.text()).toBe(stringified(expected.slice(4)));
  });

  it("keeps to one owner's notes in every chunk, of a list and of a page", async () => {
    const addUser = () =>
      db()
        .prepare("INSERT INTO users (email, password) VALUES (?, 'x') RETURNING id")
        .bind(`${marker("owner")}@example.com`)
        .first<{ id: number }>();
    const [alice, bob] = [await addUser(), await addUser()];
    const mark = marker("owned");
    // Interleaved owners, a third of a chunk each: Alice's nine notes take at least three chunks.
    const rows = seeds(mark, 18, (i) => String(i % 10).repeat(LIST_CHUNK_BYTES / 3 - 200)).map((row, i) => ({
      ...row,
      user_id: i % 2 ? bob!.id : alice!.id,
    }));
    await seedOneByOne(db(), rows);
    const expected = (await expectedNotes(db(), mark, rows)).filter((_, i) => i % 2 === 0);

    // Alice's live session, as a login would have made it.
    const sessionId = "AliceSessionAliceSess0";
    const now = Date.now();
    await db()
      .prepare("INSERT INTO sessions (id, user_id, created_at, last_used_at, expires_at) VALUES (?, ?, ?, ?, ?)")
      .bind(sessionId, alice!.id, now, now, now + 60_000)
      .run();
    const listed = await listNotes(drizzle(db()), createLogger(), { userId: alice!.id, sessionId }, now, undefined);
    expect(listed!.body).toBeInstanceOf(ReadableStream);
    const pieces = await readPieces(new Response(listed!.body));
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    expect(pieces.join("")).toBe(stringified(expected));

    // A page of four of her notes does not fit one chunk: asked for whole, then streamed in chunks.
    const page = await listNotes(drizzle(db()), createLogger(), { userId: alice!.id, sessionId }, now, {
      limit: 4,
      after: expected[0]!.id,
    });
    expect(page!.nextAfter).toBe(expected[4]!.id);
    const pagePieces = await readPieces(new Response(page!.body));
    expect(pagePieces.length).toBeGreaterThanOrEqual(2);
    expect(pagePieces.join("")).toBe(stringified(expected.slice(1, 5)));
    await db().prepare("DELETE FROM notes").run();
    await db().prepare("DELETE FROM users").run();
  });

  it("lets a chunk's query share one D1 batch with another statement", async () => {
    const rows = seeds(marker("batch"), 3);
    await seedOneByOne(db(), rows);
    const query = ownList.chunkQuery(drizzle(db()), undefined, Date.now(), {
      ...EVERY_ID,
      rows: 100,
      budget: LIST_CHUNK_BYTES,
    });
    const [chunkResult, totalResult] = await db().batch([
      query.statement,
      db().prepare("SELECT count(*) AS n FROM notes"),
    ]);
    const [chunk] = query.rows(chunkResult!);
    expect(totalResult!.results).toEqual([{ n: 3 }]);
    expect(chunk).toMatchObject({ pageCount: 3, beyondPage: 0 });
    expect(JSON.parse(`[${chunk!.items}]`)).toHaveLength(3);
  });

  it("aborts the body and logs list_stream_failed when a later chunk fails", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "error").mockImplementation((line: unknown) => lines.push(String(line)));
    const rows = seeds(marker("broken"), 4, () => "x".repeat(LIST_CHUNK_BYTES / 2));
    await seedOneByOne(db(), rows);

    // Each chunk is read only when the client asks for it, so the table goes away between the first
    // chunk and the second.
    const response = await list();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    expect(new TextDecoder().decode(first.value).startsWith("[{")).toBe(true);
    await moveTableAway();
    try {
      // The reason is neutral: the runtime logs it, and Drizzle's own error would carry the SQL.
      await expect(reader.read()).rejects.toThrow(new Error(LIST_ABORTED));
    } finally {
      await moveTableBack();
    }

    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ level: "error", event: "list_stream_failed", method: "GET", path: "/notes" });
    expect(line.errorMessage).toMatch(/no such table: notes/);
    expect(lines[0]).not.toMatch(/select/i);
  });
});

describe("GET /notes pagination", () => {
  async function createNotes(count: number): Promise<NoteJson[]> {
    const created: NoteJson[] = [];
    for (let i = 0; i < count; i++) {
      created.push((await (await call("POST", "/notes", { title: `page ${i}`, content: "x" })).json()) as NoteJson);
    }
    return created;
  }

  it("returns at most limit notes after the given id, in id order, with a Link to the next page", async () => {
    const mine = await createNotes(5);
    const before = mine[0]!.id - 1;

    const first = await call("GET", `/notes?limit=2&after=${before}`);
    expect(await jsonOf(first.clone())).toEqual({ status: 200, type: JSON_TYPE, body: mine.slice(0, 2) });
    expect(first.headers.get("link")).toBe(`</notes?limit=2&after=${mine[1]!.id}>; rel="next"`);

    const second = await call("GET", `/notes?limit=2&after=${mine[1]!.id}`);
    expect(await second.json()).toEqual(mine.slice(2, 4));
  });

  it("sends no Link header on the last page", async () => {
    const mine = await createNotes(2);
    // Ids only grow, and nothing else is created after ours in this test file, but other files may: take
    // the page after the highest id there is.
    const { n } = (await env.DB.prepare("SELECT max(id) AS n FROM notes").first<{ n: number }>())!;
    const last = await call("GET", `/notes?limit=100&after=${n - 1}`);
    expect(last.status).toBe(200);
    expect(last.headers.get("link")).toBeNull();
    expect(((await last.json()) as NoteJson[]).map((note) => note.id)).toEqual([n]);
    expect(mine.at(-1)!.id).toBeLessThanOrEqual(n);
  });

  it("starts from the first note without after", async () => {
    const response = await call("GET", "/notes?limit=1");
    const { results } = await env.DB.prepare("SELECT id FROM notes ORDER BY id LIMIT 1").all<{ id: number }>();
    expect(((await response.json()) as NoteJson[]).map((note) => note.id)).toEqual(results.map((row) => row.id));
  });

  it.each([
    ["limit=0", "limit must be an integer from 1 to 100"],
    ["limit=101", "limit must be an integer from 1 to 100"],
    ["limit=abc", "limit must be an integer from 1 to 100"],
    ["limit=1.5", "limit must be an integer from 1 to 100"],
    ["limit=10&after=x", "after must be an integer"],
    ["after=3", "after is only allowed together with limit"],
  ])("answers 400 JSON for ?%s", async (query, message) => {
    expect(await jsonOf(await call("GET", `/notes?${query}`))).toEqual({
      status: 400,
      type: JSON_TYPE,
      body: { error: message },
    });
  });
});
