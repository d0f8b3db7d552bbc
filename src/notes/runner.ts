import { compile, rowsOf, type Bound, type Placeholders, type Query, type Statement } from "../db/compiled";
import type { AccessClaims } from "../lib/access-token";
import { sessionCheck, type CallerValues } from "../auth/caller";
import type { Database } from "../types";

/**
 * The notes area's statement runner: every statement of the area is compiled once (db/compiled.ts) in two
 * shapes, for no caller (public notes) and for a caller, and a caller's statements run in one round trip
 * with the check that its session is live (auth/caller.ts says what "live" is).
 */

const compiledSessionCheck = compile((db, p: Placeholders<CallerValues>) => sessionCheck(db, p, p.now));

/** The check of the caller's session, compiled once, bound for this request: batch it with what it authorizes. */
const sessionCheckOf = (db: Database, caller: AccessClaims, now: number) =>
  compiledSessionCheck(db.$client, { ...caller, now });

/**
 * A compiled statement in its two shapes: for no caller (public notes: the values and `now`), and for a
 * caller (the values, the caller's session and user, and `now`). Bound to the request's client.
 */
function forCaller<Values extends object, Row>(shapes: {
  public: Statement<Values & { now: number }, Row>;
  private: Statement<Values & CallerValues, Row>;
}) {
  return (db: Database, caller: AccessClaims | undefined, now: number, values: Values): Bound<Row> =>
    caller ? shapes.private(db.$client, { ...values, ...caller, now }) : shapes.public(db.$client, { ...values, now });
}

/**
 * A statement for notes' callers, compiled from one builder in both shapes: `caller` is undefined for the
 * public one, the caller's placeholders for the private one.
 */
export function forCallerOf<Values extends object, Row>(
  build: (db: Database, p: Placeholders<Values & { now: number }>, caller?: Placeholders<CallerValues>) => Query<Row>,
) {
  return forCaller<Values, Row>({
    public: compile((db, p: Placeholders<Values & { now: number }>) => build(db, p)),
    private: compile((db, p: Placeholders<Values & CallerValues>) => build(db, p, p)),
  });
}

/**
 * A statement only a caller makes (a capability that needs accounts, such as attachments): compiled once, in
 * the caller's shape alone, bound with the caller's session, user and `now`. Run it with asCaller.
 */
export function forCallerOnly<Values extends object, Row>(
  build: (db: Database, p: Placeholders<Values & CallerValues>) => Query<Row>,
) {
  const statement = compile(build);
  return (db: Database, caller: AccessClaims, now: number, values: Values): Bound<Row> =>
    statement(db.$client, { ...values, ...caller, now });
}

/** The rows of each statement of a batch, in its order. */
export type RowsOf<Queries extends readonly Bound<unknown>[]> = {
  -readonly [K in keyof Queries]: Queries[K] extends Bound<infer Row> ? Row[] : never;
};

/**
 * Runs `query`, which acts for `caller`, in one round trip with the check of the caller's session: its
 * rows, or undefined when the session is not live (the caller gets a 401, whatever the query found).
 * Without a caller (public notes) the query runs alone, as a plain statement rather than a batch (which
 * D1 runs as a transaction). The notes area's statements are compiled once (db/compiled.ts), this check too.
 *
 * Several statements (`queries`) run as one batch, so one transaction, with or without a caller: the rows
 * of each, in order.
 */
export async function asCaller<Row>(
  db: Database,
  caller: AccessClaims | undefined,
  now: number,
  query: Bound<Row>,
): Promise<Row[] | undefined>;
export async function asCaller<const Queries extends readonly Bound<unknown>[]>(
  db: Database,
  caller: AccessClaims | undefined,
  now: number,
  queries: Queries,
): Promise<RowsOf<Queries> | undefined>;
export async function asCaller(
  db: Database,
  caller: AccessClaims | undefined,
  now: number,
  query: Bound<unknown> | readonly Bound<unknown>[],
): Promise<unknown[] | undefined> {
  if ("statement" in query) {
    if (!caller) return rowsOf(query);
    const [live, result] = await db.$client.batch([sessionCheckOf(db, caller, now).statement, query.statement]);
    return live!.results.length > 0 ? query.rows(result!) : undefined;
  }
  const statements = query.map((bound) => bound.statement);
  const results = await db.$client.batch(
    caller ? [sessionCheckOf(db, caller, now).statement, ...statements] : statements,
  );
  if (caller && results[0]!.results.length === 0) return undefined;
  const own = caller ? results.slice(1) : results;
  return query.map((bound, i) => bound.rows(own[i]!));
}
