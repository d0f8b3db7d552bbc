import { Param, Placeholder, sql, type SQL } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import type { D1Client, Database } from "./client";

/**
 * Statements that Drizzle writes once per isolate rather than once per request. Building a query (its
 * SQL text and parameters from the builder's chunks) is most of what Drizzle costs a short request, more
 * than the database's own work for a single note (docs/performance.md). The notes area's hot statements
 * are therefore compiled: the builder runs the first time a statement is used, with a placeholder
 * wherever a request's value goes (`p.name`), and each request binds its values on its own client
 * (its D1 session: replication and bookmarks keep working). Everything else stays an ordinary query.
 */

/** The SQL text of a compiled statement and, per parameter, a fixed value or the name of the request's value. */
interface Compiled {
  sql: string;
  params: ({ fixed: unknown } | { name: string })[];
}

/** A statement with the request's values bound, and how to read its rows. */
export interface Bound<Row> {
  statement: D1PreparedStatement;
  /** The rows of its result: keyed by the columns' names, which the builder gives the fields' (see `compile`). */
  rows(result: D1Result): Row[];
}

/** A statement compiled once: `bind` it to a request's client and values. */
export type Statement<Values, Row> = (client: D1Client, values: Values) => Bound<Row>;

/** What `compile` takes: any Drizzle query (select, insert, update or delete with returning). */
export interface Query<Row> {
  toSQL(): { sql: string; params: unknown[] };
  _: { result: Row[] };
}

/** The builder compiled statements are written with: its client is never called (only `toSQL` is). */
const builder: Database = drizzle({
  prepare() {
    throw new Error("the compiling builder runs no query");
  },
  batch() {
    throw new Error("the compiling builder runs no query");
  },
} as unknown as D1Database);

/** The placeholders of a statement's values: `p.id` is where the request's `id` goes. */
export type Placeholders<Values> = { readonly [K in keyof Values]: SQL<Values[K]> };

const placeholders = new Proxy<Record<string, SQL>>({}, { get: (_, name) => sql`${sql.placeholder(String(name))}` });

/**
 * Compiles `build`'s query on first use; the type of its placeholders names the values `bind` takes. The
 * query's fields must come back under their own names, since D1 keys each row by column name: a column
 * whose SQL name is its field's (`revision: notes.revision`) does; any other field needs `.as(field)`
 * (an SQL expression, or `requestHash`, whose column is `request_hash`). Values come back as SQLite
 * holds them, without Drizzle's column modes (a timestamp is its number). A value the builder writes
 * itself rather than through `p` (a constant) is fixed at the first use, for the isolate's life.
 */
export function compile<Values extends object, Row>(
  build: (db: Database, p: Placeholders<Values>) => Query<Row>,
): Statement<Values, Row> {
  let compiled: Compiled | undefined;
  return (client, values) => {
    compiled ??= compileQuery(build(builder, placeholders as Placeholders<Values>));
    const params = compiled.params.map((param) =>
      "name" in param ? (values as Record<string, unknown>)[param.name] : param.fixed,
    );
    return { statement: client.prepare(compiled.sql).bind(...params), rows: (result) => result.results as Row[] };
  };
}

function compileQuery(query: Query<unknown>): Compiled {
  const { sql: text, params } = query.toSQL();
  return {
    sql: text,
    params: params.map((param) => {
      // A placeholder given as a column's value would need the column's encoding; `p.name` is plain SQL.
      if (param instanceof Param && param.value instanceof Placeholder)
        throw new Error(`placeholder "${param.value.name}" used as a column value`);
      return param instanceof Placeholder ? { name: String(param.name) } : { fixed: param };
    }),
  };
}

/** Runs one bound statement alone: its rows. */
export async function rowsOf<Row>(bound: Bound<Row>): Promise<Row[]> {
  return bound.rows(await bound.statement.all());
}
