import { reset } from "cloudflare:test";
import { env } from "cloudflare:workers";

/**
 * Runs before each test file. The files of a vitest worker share one Workers runtime (`isolate: false` in
 * vitest.config.ts), so each file first gets back the storage a runtime of its own would give it: `reset()`
 * deletes the data of every binding (each D1 database, tables included, and every Durable Object: the live hubs
 * and their sockets), then DB is migrated with the real migrations. About 0.1 s a file.
 */

/**
 * What `applyD1Migrations` from cloudflare:test does (the same `d1_migrations` table, the same rows, so a test may
 * still call it), in one batch instead of one per migration: the migrations not applied yet.
 */
async function migrate(db: D1Database): Promise<void> {
  await db
    .prepare(
      "CREATE TABLE IF NOT EXISTS d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, " +
        "applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)",
    )
    .run();
  const applied = new Set(
    (await db.prepare("SELECT name FROM d1_migrations").all<{ name: string }>()).results.map((row) => row.name),
  );
  const missing = env.TEST_MIGRATIONS.filter((migration) => !applied.has(migration.name));
  if (missing.length === 0) return;
  const record = db.prepare("INSERT INTO d1_migrations (name) VALUES (?)");
  await db.batch([
    ...missing.flatMap((migration) => [
      ...migration.queries.map((query) => db.prepare(query)),
      record.bind(migration.name),
    ]),
  ]);
}

// Work the previous file left running (a hub's D1 write after its last socket closed) can keep its database
// alive through the reset: migrate applies only what is missing, as applyD1Migrations does.
await reset();
await migrate(env.DB);
