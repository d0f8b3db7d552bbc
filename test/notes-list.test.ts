import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { LIST_ABORTED, LIST_CHUNK_CHARS, LIST_CHUNK_SIZE } from "../src/notes/list";
import { call, callWithEnv, JSON_TYPE } from "./helpers";

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
}

const INSERT = "INSERT INTO notes (title, content, created_at) VALUES (?, ?, ?)";
const BASE_TIME = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

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
  await db.batch(rows.map((row) => insert.bind(row.title, row.content, row.created_at)));
}

/**
 * Many notes fast: multi-row INSERTs of 33 notes (99 bound parameters; D1 allows 100 per statement),
 * 100 statements per D1 batch.
 */
async function seedMany(db: D1Database, rows: Seed[]): Promise<void> {
  const ROWS_PER_STATEMENT = 33;
  const STATEMENTS_PER_BATCH = 100;
  const sql = (n: number) => `INSERT INTO notes (title, content, created_at) VALUES ${Array(n).fill("(?, ?, ?)").join(", ")}`;
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
  const { results } = await db.prepare("SELECT id, title FROM notes WHERE title LIKE ? ORDER BY id").bind(`${mark} %`).all<{ id: number; title: string }>();
  expect(results).toHaveLength(rows.length);
  return results.map((stored, i) => {
    const row = rows[i]!;
    expect(stored.title).toBe(row.title);
    return { id: stored.id, title: row.title, content: row.content, created_at: new Date(row.created_at).toISOString() };
  });
}

/** GET /notes as a client sees it: 200, application/json, and a body that is one JSON array. */
async function listNotes(response: Response | Promise<Response>): Promise<NoteJson[]> {
  const res = await response;
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe(JSON_TYPE);
  const list = JSON.parse(await res.text()) as unknown;
  expect(Array.isArray(list)).toBe(true);
  return list as NoteJson[];
}

function expectStrictlyAscending(list: NoteJson[]): void {
  for (let i = 1; i < list.length; i++) {
    if (!(list[i]!.id > list[i - 1]!.id)) throw new Error(`ids not strictly ascending at ${i}: ${list[i - 1]!.id}, ${list[i]!.id}`);
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

afterEach(() => {
  vi.restoreAllMocks();
});

describe("GET /notes, streamed in chunks", () => {
  it("lists notes across several chunk boundaries exactly, in order, once each", async () => {
    const mark = marker("chunks");
    const rows = seeds(mark, 2 * LIST_CHUNK_SIZE + 37);
    await seedOneByOne(env.DB, rows);
    try {
      const expected = await expectedNotes(env.DB, mark, rows);

      const list = await listNotes(call("GET", "/notes"));
      expectStrictlyAscending(list);
      for (const note of list) expect(Object.keys(note).sort()).toEqual(["content", "created_at", "id", "title"]);
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
      const ids = await env.DB.prepare("SELECT MIN(id) AS first, MAX(id) AS last, COUNT(*) AS n FROM notes WHERE title LIKE ?")
        .bind(`${mark} %`)
        .first<{ first: number; last: number; n: number }>();
      expect(ids!.n).toBe(COUNT);

      started = performance.now();
      const list = await listNotes(call("GET", "/notes"));
      const listMs = performance.now() - started;

      expectStrictlyAscending(list);
      const mine = list.filter((note) => note.title.startsWith(`${mark} `));
      expect(mine).toHaveLength(COUNT);
      expect(mine[0]).toEqual({ id: ids!.first, title: first.title, content: first.content, created_at: new Date(first.created_at).toISOString() });
      expect(mine[COUNT - 1]).toEqual({ id: ids!.last, title: last.title, content: last.content, created_at: new Date(last.created_at).toISOString() });
      // Seeded in order in one transaction per batch, so the titles follow the ids.
      mine.forEach((note, i) => {
        if (note.title !== rows[i]!.title) throw new Error(`note ${i} is ${note.title}, expected ${rows[i]!.title}`);
      });
      console.log(`100k notes: seeding ${Math.round(seedMs)} ms, listing (request to parsed body) ${Math.round(listMs)} ms`);
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
    expect(JSON.parse(lines[0]!)).toMatchObject({ event: "unhandled_error", errorMessage: expect.stringMatching(/no such table: notes/) });
  });
});

/**
 * LIST_DB is this file's own database: it holds exactly the notes a test puts there, and its table can be
 * renamed away while a response is being read, which makes the next chunk's query fail for real.
 */
describe("GET /notes on a database of its own", () => {
  const db = () => env.LIST_DB;
  const list = () => callWithEnv({ DB: env.LIST_DB }, "GET", "/notes");
  const moveTableAway = () => db().prepare("ALTER TABLE notes RENAME TO notes_away").run();
  const moveTableBack = () => db().prepare("ALTER TABLE notes_away RENAME TO notes").run();

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

  it("sends a list shorter than one chunk from one query: the body is complete without the table", async () => {
    const mark = marker("one");
    const rows = seeds(mark, LIST_CHUNK_SIZE - 1);
    await seedOneByOne(db(), rows);
    const expected = await expectedNotes(db(), mark, rows);

    const response = await list();
    await moveTableAway();
    try {
      // Read after the table is gone: everything came from the one query made before the answer.
      expect(JSON.parse((await readPieces(response)).join(""))).toEqual(expected);
    } finally {
      await moveTableBack();
    }
  });

  it("sends a list of exactly one chunk from one query too: the body is complete without the table", async () => {
    const mark = marker("full");
    const rows = seeds(mark, LIST_CHUNK_SIZE);
    await seedOneByOne(db(), rows);
    const expected = await expectedNotes(db(), mark, rows);

    const response = await list();
    await moveTableAway();
    try {
      expect(JSON.parse((await readPieces(response)).join(""))).toEqual(expected);
    } finally {
      await moveTableBack();
    }
  });

  it("sends one piece per chunk, each query continuing after the last id sent", async () => {
    const mark = marker("pieces");
    const rows = seeds(mark, 2 * LIST_CHUNK_SIZE + 1);
    await seedOneByOne(db(), rows);
    const expected = await expectedNotes(db(), mark, rows);

    const pieces = await readPieces(await list());
    expect(pieces).toHaveLength(3);
    expect(pieces[0]!.startsWith("[")).toBe(true);
    expect(pieces[1]!.startsWith(",")).toBe(true);
    expect(pieces[2]).toBe(`,${JSON.stringify(expected.at(-1))}]`);
    expect(JSON.parse(pieces.join(""))).toEqual(expected);
  });

  it("cuts chunks by size too: large notes go a few per chunk, the list stays exact", async () => {
    const mark = marker("large");
    // Each note is a quarter of the size budget, so a chunk holds four or five of them, not 500.
    const big = (i: number) => String(i % 10).repeat(LIST_CHUNK_CHARS / 4);
    const rows = seeds(mark, 12, big);
    await seedOneByOne(db(), rows);
    const expected = await expectedNotes(db(), mark, rows);

    const pieces = await readPieces(await list());
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    expect(pieces.length).toBeLessThanOrEqual(4);
    for (const piece of pieces) expect(piece.length).toBeLessThan(LIST_CHUNK_CHARS * 1.5);
    expect(JSON.parse(pieces.join(""))).toEqual(expected);
  });

  it("aborts the body and logs list_stream_failed when a later chunk fails", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "error").mockImplementation((line: unknown) => lines.push(String(line)));
    const rows = seeds(marker("broken"), LIST_CHUNK_SIZE + 1);
    await seedOneByOne(db(), rows);

    // The first chunk was read before the response existed; the second is read only when the client
    // has taken the first, so the table goes away in between.
    const response = await list();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    await moveTableAway();
    try {
      const reader = response.body!.getReader();
      const first = await reader.read();
      expect(first.done).toBe(false);
      expect(new TextDecoder().decode(first.value).startsWith("[{")).toBe(true);
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
