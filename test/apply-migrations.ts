import { env } from "cloudflare:workers";

/**
 * Runs before each test file. The files of a vitest worker share one Workers runtime (`isolate: false` in
 * vitest.config.ts), so each file first gets back what a runtime of its own would give it: every D1 database
 * empty (TEST_DATABASES), then DB migrated with the real migrations. A file never sees another file's rows or
 * tables. Both steps are one transaction each: about 0.1 s a file.
 */

interface SchemaObject {
  type: string;
  name: string;
  sql: string | null;
}

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** Drops every table, view and trigger of `db` (D1 keeps `sqlite_*` and `_cf_*` to itself). */
async function empty(db: D1Database): Promise<void> {
  const { results } = await db
    .prepare(
      "SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'view', 'trigger') " +
        "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'",
    )
    .all<SchemaObject>();
  if (results.length === 0) return;
  const isVirtual = (object: SchemaObject) => /^CREATE VIRTUAL TABLE/i.test(object.sql ?? "");
  // Virtual tables before the others: their shadow tables go with them (hence IF EXISTS). Foreign keys are
  // checked at the commit, when no table is left.
  const ordered = [
    ...results.filter((object) => object.type === "trigger"),
    ...results.filter((object) => object.type === "view"),
    ...results.filter((object) => object.type === "table" && isVirtual(object)),
    ...results.filter((object) => object.type === "table" && !isVirtual(object)),
  ];
  await db.batch([
    db.prepare("PRAGMA defer_foreign_keys = ON"),
    ...ordered.map((object) => db.prepare(`DROP ${object.type.toUpperCase()} IF EXISTS ${quoted(object.name)}`)),
  ]);
}

/**
 * What `applyD1Migrations` from cloudflare:test does to an empty database (the same `d1_migrations` table, the
 * same rows, so a test may still call it), in one batch instead of one per migration.
 */
async function migrate(db: D1Database): Promise<void> {
  const record = db.prepare("INSERT INTO d1_migrations (name) VALUES (?)");
  await db.batch([
    db.prepare(
      "CREATE TABLE IF NOT EXISTS d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, " +
        "applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)",
    ),
    ...env.TEST_MIGRATIONS.flatMap((migration) => [
      ...migration.queries.map((query) => db.prepare(query)),
      record.bind(migration.name),
    ]),
  ]);
}

await Promise.all(env.TEST_DATABASES.map((name) => empty(Reflect.get(env, name) as D1Database)));
await migrate(env.DB);
