import { env } from "cloudflare:workers";
import { eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { compile, rowsOf, type Placeholders } from "../../src/db/compiled";
import { notes } from "../../src/notes/schema";

/** Statements Drizzle writes once per isolate and each request binds on its own D1 client. */

describe("compile", () => {
  it("builds the query once, then binds each call's values by name on the client it is given", async () => {
    let builds = 0;
    const find = compile((db, p: Placeholders<{ title: string; extra: string }>) => {
      builds++;
      return db
        .select({ id: notes.id, greeting: sql<string>`${p.extra} || ' ' || ${notes.title} || ${"!"}`.as("greeting") })
        .from(notes)
        .where(eq(notes.title, p.title));
    });
    const title = `compiled ${crypto.randomUUID()}`;
    const { id } = (await env.DB.prepare(
      "INSERT INTO notes (title, content, created_at) VALUES (?, 'c', 0) RETURNING id",
    )
      .bind(title)
      .first<{ id: number }>())!;

    // The values in another order than the statement's parameters; a fixed value ("!") stays where Drizzle put it.
    expect(await rowsOf(find(env.DB, { extra: "hello", title }))).toEqual([{ id, greeting: `hello ${title}!` }]);
    // On a D1 session (what every request runs on), with other values: the same compiled text.
    expect(await rowsOf(find(env.DB.withSession("first-primary"), { extra: "bye", title }))).toEqual([
      { id, greeting: `bye ${title}!` },
    ]);
    expect(await rowsOf(find(env.DB, { extra: "x", title: "no such title" }))).toEqual([]);
    expect(builds).toBe(1);
  });

  it("runs in a D1 batch with other statements", async () => {
    const one = compile((db, p: Placeholders<{ n: number }>) =>
      db.select({ n: sql<number>`${p.n} + 1`.as("n") }).from(sql`(SELECT 1)`),
    );
    const first = one(env.DB, { n: 1 });
    const second = one(env.DB, { n: 41 });
    const [a, b] = await env.DB.batch([first.statement, second.statement]);
    expect([first.rows(a!), second.rows(b!)]).toEqual([[{ n: 2 }], [{ n: 42 }]]);
  });

  it("keys rows by column name: a field whose column is named otherwise needs .as()", async () => {
    const title = `compiled ${crypto.randomUUID()}`;
    await env.DB.prepare("INSERT INTO notes (title, content, created_at) VALUES (?, 'c', 1234) RETURNING id")
      .bind(title)
      .run();
    const read = compile((db, p: Placeholders<{ title: string }>) =>
      db
        .select({ createdAt: sql<number>`${notes.createdAt}`.as("createdAt"), revision: notes.revision })
        .from(notes)
        .where(eq(notes.title, p.title)),
    );
    // Without the alias it would come back as `created_at`; its value is SQLite's (a number, not a Date). The
    // revision (numbered by the clock trigger) keeps its name: its column is `revision`.
    expect(await rowsOf(read(env.DB, { title }))).toEqual([
      { createdAt: 1234, revision: expect.any(Number) as number },
    ]);
  });

  it("refuses a placeholder given as a column's value, which would skip the column's encoding", () => {
    const insert = compile((db, _p: Placeholders<{ at: Date }>) =>
      db
        .insert(notes)
        .values({ title: "t", content: "c", createdAt: sql.placeholder("at") })
        .returning({ id: notes.id }),
    );
    expect(() => insert(env.DB, { at: new Date() })).toThrow('placeholder "at" used as a column value');
  });
});
