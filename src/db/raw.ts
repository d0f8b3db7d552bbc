import type { SQLiteRaw } from "drizzle-orm/sqlite-core/query-builders/raw";
import type { Database } from "../types";

/**
 * A raw `sql` query made fit for `db.batch()`. drizzle-orm 0.45's D1 batch binds the parameters to
 * `stmt`, the D1 statement its query builders prepare, which raw queries never get (the batch fails
 * with "Cannot read properties of undefined (reading 'bind')"): this prepares it.
 */
export function batchable<Q extends SQLiteRaw<unknown>>(db: Database, query: Q): Q {
  return Object.assign(query, { stmt: db.$client.prepare(query.getQuery().sql) });
}
