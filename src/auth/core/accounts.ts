import { and, eq, getTableColumns, gt, ne, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { SQLiteInsertSelectQueryBuilder } from "drizzle-orm/sqlite-core";
import type { Database } from "../../types";
import type { Context } from "hono";
import type { AccessClaims } from "../../lib/access-token";
import { callerSession, liveSession, type CallerEnv } from "../caller";
import { emailChangeReverts, loginFailures, oauthIdentities, sessions, users } from "../schema";
import { factorFields, factorOf, type Factor } from "./factor";

/**
 * The account rows every flow reads and writes: the account of an address, a new account (registration and a
 * provider's first sign-in alike), the columns every password write sets, and whether an address is taken.
 */

/** A ban without an end (`until: null`) is stored as the last millisecond of year 9999: the API shows that date. */
export const BANNED_FOREVER = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** The condition that the account (a row of `users` in the statement) is not suspended at `now`. */
export function notSuspended(now: number): SQL {
  return sql`(${users.bannedUntil} IS NULL OR ${users.bannedUntil} <= ${now})`;
}

/** Whether a ban read from the account's row (`banned_until`) holds at `now`. */
export function isSuspended(bannedUntil: number | null | undefined, now: number): boolean {
  return bannedUntil !== null && bannedUntil !== undefined && bannedUntil > now;
}

/** The account's ban as it stands: read in the batch of a sign-in to tell a suspension from the other refusals. */
export function banOf(db: Database, userId: number) {
  return db.select({ bannedUntil: users.bannedUntil }).from(users).where(eq(users.id, userId));
}

/** The account a sign-in by address reads, with its factor: one row or none. */
export function accountByEmail(db: Database, email: string) {
  return db
    .select({
      id: users.id,
      password: users.password,
      isVerified: users.isVerified,
      signInEpoch: users.signInEpoch,
      ...factorFields,
    })
    .from(users)
    .where(eq(users.email, email));
}

/** What a device token is checked against: the account of the address, if any, and when its password last changed. */
export async function deviceAccount(
  db: Database,
  email: string,
): Promise<{ id: number; email: string; passwordChangedAt: number } | undefined> {
  const [account] = await db
    .select({ id: users.id, email: users.email, passwordChangedAt: users.passwordChangedAt })
    .from(users)
    .where(eq(users.email, email));
  return account;
}

/**
 * The columns every password write sets: the password (a hash, or NO_PASSWORD), the sign-in epoch moved on
 * (sign-ins checked against the old one open nothing: core/gate.ts) and when it changed (device tokens
 * issued before it are stale: core/devices.ts).
 */
export const passwordWrite = (hash: string, now: number) => ({
  password: hash,
  signInEpoch: sql`${users.signInEpoch} + 1`,
  passwordChangedAt: now,
});

/**
 * The condition that `email` is reserved: an account gave it up in an e-mail change whose revert token
 * still lives, so that account may take it back (any account but `except`, which may reuse its own).
 */
export function reserved(email: string | SQL, now: number, except?: number | SQL): SQL {
  const others = except === undefined ? undefined : ne(emailChangeReverts.userId, except);
  return sql`EXISTS (SELECT 1 FROM ${emailChangeReverts} WHERE ${and(eq(emailChangeReverts.oldEmail, email), gt(emailChangeReverts.expiresAt, now), others)})`;
}

/** What a new account is made with; every other column takes its default. */
export interface NewAccount {
  email: string;
  /** A bcrypt hash, or NO_PASSWORD (an account made by a provider's sign-in). */
  password: string;
  isVerified: boolean;
  /** The registration mail, counted as the first of the hour's allowance (0: none was claimed). */
  mailClaimedAt: number;
}

/**
 * The statement that makes an account, unless its address is taken (the unique index decides between
 * concurrent ones, not a prior read) or reserved (an undoable e-mail change gave it up): one row with its
 * id, or none. Every column Drizzle's INSERT … SELECT wants is given: the ones set here, the others their
 * defaults (a new column with a default needs nothing here). Batchable.
 */
export function newAccount(db: Database, account: NewAccount, now: number) {
  const claimed = account.mailClaimedAt;
  const set: Partial<Record<keyof typeof users.$inferInsert, string | number | null>> = {
    email: account.email,
    password: account.password,
    isVerified: account.isVerified ? 1 : 0,
    createdAt: now,
    lastMailAt: claimed,
    mailWindowStart: claimed,
    mailsInWindow: claimed > 0 ? 1 : 0,
  };
  const row = Object.fromEntries(
    Object.entries(getTableColumns(users)).map(([key, column]) => {
      const value = key in set ? set[key as keyof typeof set] : column.default;
      return [key, sql`${value ?? null}`.as(column.name)];
    }),
  );
  // The row is built from the table's own columns, which the compiler cannot follow: it is every column, in order.
  const select = db
    .select(row)
    .from(sql`(SELECT 1)`)
    .where(sql`NOT ${reserved(account.email, now)}`) as unknown as SQLiteInsertSelectQueryBuilder<typeof users>;
  return db.insert(users).select(select).onConflictDoNothing({ target: users.email }).returning({ id: users.id });
}

/** Whether another account holds `email`, or has it reserved (any account but `except`). */
export async function addressHeld(db: Database, email: string, now: number, except?: number): Promise<boolean> {
  const [held] = await db
    .select({ held: sql<number>`1` })
    .from(sql`(SELECT 1)`)
    .where(
      sql`EXISTS (SELECT 1 FROM ${users} WHERE ${and(eq(users.email, email), except === undefined ? undefined : ne(users.id, except))}) OR ${reserved(email, now, except)}`,
    );
  return held !== undefined;
}

export interface CallerAccount {
  id: number;
  email: string;
  password: string;
  isVerified: boolean;
  createdAt: number;
  /** When the caller's session was opened (its login, not its last refresh). */
  sessionCreatedAt: number;
  factor: Factor | undefined;
  recoveryCodes: number;
}

/** The account of the session `ofSession` selects (a condition on `sessions`), if that session is live. */
export function callerAccountQuery(db: Database, ofSession: SQL) {
  return db
    .select({
      id: users.id,
      email: users.email,
      password: users.password,
      isVerified: users.isVerified,
      createdAt: users.createdAt,
      sessionCreatedAt: sessions.createdAt,
      ...factorFields,
    })
    .from(users)
    .innerJoin(sessions, eq(sessions.userId, users.id))
    .where(ofSession);
}

export function toCallerAccount({
  totpStatus,
  totpSecret,
  totpLastStep,
  ...row
}: Awaited<ReturnType<typeof callerAccountQuery>>[number]): CallerAccount {
  return { ...row, factor: factorOf({ totpStatus, totpSecret, totpLastStep }) };
}

/** The caller's account, read in one query with the check that the caller's session is live. */
export async function callerAccount(c: Context<CallerEnv>, caller: AccessClaims): Promise<CallerAccount | undefined> {
  const [account] = await callerAccountQuery(c.var.db, callerSession(caller, Date.now()));
  return account && toCallerAccount(account);
}

/**
 * The caller's account and its linked sign-in identities (oldest first), in one round trip, while the caller's
 * session is live (GET /auth/me).
 */
export async function callerProfile(db: Database, caller: AccessClaims, now: number) {
  const [[account], identities] = await db.batch([
    callerAccountQuery(db, callerSession(caller, now)),
    db
      .select({
        provider: oauthIdentities.provider,
        email: oauthIdentities.email,
        createdAt: oauthIdentities.createdAt,
      })
      .from(oauthIdentities)
      .where(and(eq(oauthIdentities.userId, caller.userId), liveSession(caller, now)))
      .orderBy(oauthIdentities.createdAt, oauthIdentities.provider),
  ]);
  return account && { account: toCallerAccount(account), identities };
}

/**
 * What another area keeps for an account (the notes area's notes and their feed), as statements to run
 * in the account's deletion, each only while `guard` holds: handed to the accounts area at wiring time
 * (index.ts), so that this area names no table of another.
 */
export type OwnedElsewhere = (db: Database, userId: number, guard: SQL) => BatchItem<"sqlite">[];

/**
 * The deletion of account `userId` (its owner's, or an operator's), as statements for one batch, each only while
 * `guard` holds: `recordDeleted` first (its `user.deleted` event, while the account still exists), what other areas
 * keep for it (it may point at the user), the address's login attempts, then the user, whose sessions, codes and
 * factors go with it. The last statement answers the deleted row.
 */
export function accountDeletion(
  db: Database,
  account: { id: number; email: string | SQL },
  ownedElsewhere: OwnedElsewhere,
  guard: SQL,
  recordDeleted: BatchItem<"sqlite">[],
): BatchItem<"sqlite">[] {
  return [
    ...recordDeleted,
    ...ownedElsewhere(db, account.id, guard),
    db.delete(loginFailures).where(and(eq(loginFailures.email, account.email), guard)),
    db
      .delete(users)
      .where(and(eq(users.id, account.id), guard))
      .returning({ id: users.id }),
  ];
}
