import { sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { drizzle, type DrizzleD1Database } from "drizzle-orm/d1";

/**
 * What drizzle-orm's D1 driver calls on its client: `prepare` and `batch`, nothing else (d1/session.js in
 * 0.45). A D1 session from `withSession()` has both, like the binding itself, but drizzle types its
 * client as the whole binding (session support is drizzle-orm#4522, still open). So the one cast below
 * narrows nothing drizzle uses; `D1Client` keeps the compiler checking that a session has what it needs.
 */
export type D1Client = Pick<D1Database, "prepare" | "batch">;

/** Plain query builder: the app uses no relational queries, so no schema is registered. */
export type Database = DrizzleD1Database & { $client: D1Client };

export function databaseOf(client: D1Client): Database {
  return drizzle(client as D1Database);
}

/** The header a client sends its last bookmark in, and gets the new one back in. */
export const BOOKMARK_HEADER = "X-D1-Bookmark";

/** A bookmark as D1 hands them out: four lower-case hex groups, ordered as the database's history. */
export const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

export function isBookmark(value: string): boolean {
  return BOOKMARK.test(value);
}

/**
 * The D1 session of one request (read replication). A read (GET, HEAD) may be served by the nearest
 * replica, however far behind it is ("first-unconstrained"); anything else starts at the primary, where
 * its writes go anyway ("first-primary"). With the bookmark of the client's last answer, the session
 * starts at a copy at least that recent: the client reads its own writes. Within one request, queries
 * are sequentially consistent either way.
 */
export function requestSession(binding: D1Database, method: string, bookmark: string | undefined): D1DatabaseSession {
  const isRead = method === "GET" || method === "HEAD";
  return binding.withSession(bookmark ?? (isRead ? "first-unconstrained" : "first-primary"));
}

/**
 * The request's session as the app's client, and whether anything was asked of it: an answer that
 * asked the database nothing has no bookmark of its own to hand out (the session would only report the
 * one the client sent).
 */
export function trackedClient(session: D1DatabaseSession): { client: D1Client; asked: () => boolean } {
  let asked = false;
  const client: D1Client = {
    prepare(query) {
      asked = true;
      return session.prepare(query);
    },
    batch<T = unknown>(statements: D1PreparedStatement[]) {
      asked = true;
      return session.batch<T>(statements);
    },
  };
  return { client, asked: () => asked };
}

/**
 * Runs any number of statements (none included) in one batch, one transaction: each one's result, as drizzle gives it.
 */
export function batchOf(db: Database, statements: BatchItem<"sqlite">[]): Promise<unknown[]> {
  const [first, ...rest] = statements;
  return first ? db.batch([first, ...rest]) : Promise.resolve([]);
}

/**
 * An ORDER BY with a page's LIMIT, for drizzle's `.orderBy()`: the `limit` rows of a page and one more (whether a
 * next page follows), the value written into an expression (a bare bound `LIMIT ?` is compiled again at every bind:
 * CONTRIBUTING.md, "A statement on a hot path").
 */
export function orderedPage(limit: number, ...order: SQL[]): SQL {
  return sql`${sql.join(order, sql`, `)} LIMIT ${limit} + 1`;
}
