import { and, eq, gt, inArray, sql, type SQL } from "drizzle-orm";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { ConfigError } from "../config";
import { compile, rowsOf, type Bound, type Placeholders, type Query, type Statement } from "../db/compiled";
import { sessions } from "../db/schema";
import { verifyAccessToken, type AccessClaims } from "../lib/access-token";
import type { AppEnv, Database } from "../types";
import { AuthMessage } from "./messages";

/**
 * The caller: who an access token speaks for, and whether the session it belongs to is still live. This is
 * all the notes area takes from the accounts area; the session lifecycle itself is in session-store.ts.
 */

/** The environment of a handler behind requireAccessToken: `c.var.caller` is always set there. */
export type CallerEnv = AppEnv & { Variables: { caller: AccessClaims } };

/** A caller as a statement names it: its values, or a compiled statement's placeholders for them (db/compiled.ts). */
export interface CallerRef {
  sessionId: string | SQL<string>;
  userId: number | SQL<number>;
}

/** The values of a compiled statement that acts for a caller at a time: its session, its user, and `now`. */
export type CallerValues = AccessClaims & { now: number };

/** The caller's session row, as long as it is live (a condition on `sessions`). */
export function callerSession(caller: CallerRef, now: number | SQL<number>): SQL {
  return and(eq(sessions.id, caller.sessionId), eq(sessions.userId, caller.userId), gt(sessions.expiresAt, now))!;
}

/** The condition that the caller's session is live: part of every statement a session authorizes. */
export function liveSession(caller: CallerRef, now: number | SQL<number>): SQL {
  return sql`EXISTS (SELECT 1 FROM ${sessions} WHERE ${callerSession(caller, now)})`;
}

/**
 * The caller's user id (`userId`) as a select source, one row while the caller's session is live and
 * none after: what another area writes `INSERT … SELECT … FROM` to act for the caller only while it may,
 * without naming the sessions table.
 */
export function liveSessionOf(db: Database, caller: CallerRef, now: number | SQL<number>) {
  return db.select({ userId: sessions.userId }).from(sessions).where(callerSession(caller, now)).as("live_session");
}

/** The caller's session, if live: batch it with the statement it authorizes, to tell 401 from the rest. */
export function sessionCheck(db: Database, caller: CallerRef, now: number | SQL<number>) {
  return db.select({ id: sessions.id }).from(sessions).where(callerSession(caller, now));
}

/**
 * Which of `sessionIds` are live sessions of `userId` at `now`, each with the time it ends (one query): for
 * what holds on to sessions beyond one request, the live sockets (src/live/hub.ts), to close those whose
 * session has ended.
 */
export async function liveSessionsAmong(
  db: Database,
  userId: number,
  sessionIds: readonly string[],
  now: number,
): Promise<Map<string, number>> {
  if (sessionIds.length === 0) return new Map();
  const rows = await db
    .select({ id: sessions.id, expiresAt: sessions.expiresAt })
    .from(sessions)
    .where(and(inArray(sessions.id, [...sessionIds]), eq(sessions.userId, userId), gt(sessions.expiresAt, now)));
  return new Map(rows.map((row) => [row.id, row.expiresAt]));
}

const compiledSessionCheck = compile((db, p: Placeholders<CallerValues>) => sessionCheck(db, p, p.now));

/** The check of the caller's session, compiled once, bound for this request: batch it with what it authorizes. */
export const sessionCheckOf = (db: Database, caller: AccessClaims, now: number) =>
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

/**
 * The claims of an `Authorization: Bearer <access token>` header, or undefined when there is none or
 * it is not valid. Checks the signature and the claims only; the session is checked in D1 by the handler.
 */
export async function bearerClaims(
  authorization: string | undefined,
  jwtSecret: string | undefined,
): Promise<AccessClaims | undefined> {
  if (!jwtSecret) throw new ConfigError("JWT_SECRET_KEY is not set; cannot check access tokens");
  const token = /^Bearer +([^ ]+)$/i.exec(authorization ?? "")?.[1];
  return token ? verifyAccessToken(token, jwtSecret).catch(() => undefined) : undefined;
}

/** The accounts area's 401 for a missing, invalid or revoked access token. */
export function unauthorized(c: Context) {
  return c.text(AuthMessage.invalidAccessToken, 401, { "WWW-Authenticate": "Bearer" });
}

/** For /auth endpoints that act for a logged-in user: sets `c.var.caller` from a valid access token. */
export const requireAccessToken = createMiddleware<CallerEnv>(async (c, next) => {
  const caller = await bearerClaims(c.req.header("Authorization"), c.var.config.jwtSecret);
  if (!caller) return unauthorized(c);
  c.set("caller", caller);
  await next();
});
