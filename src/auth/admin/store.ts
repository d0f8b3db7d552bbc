import { and, asc, desc, eq, gt, gte, lt, sql, type SQL } from "drizzle-orm";
import type { AuditTrail } from "../../audit/events";
import { batchOf, orderedPage } from "../../db/client";
import { NO_PASSWORD } from "../../lib/password";
import type { Database } from "../../types";
import { oauthIdentities, passkeys, sessions, users } from "../schema";
import { accountDeletion, BANNED_FOREVER, type OwnedElsewhere } from "../core/accounts";
import { factorFields } from "../core/factor";
import type { SessionEnding } from "../core/sessions";

/** The SQL of the admin API's accounts: the list, one account with its sessions, a ban and its end, sign-out, deletion. */

/**
 * What an operator sees of an account (AdminUser), read in one statement. The subqueries compare with eq(), which
 * names the table of each column: in a select from one table, drizzle writes a column in an sql`` template bare.
 */
const userFields = {
  id: users.id,
  email: users.email,
  isVerified: users.isVerified,
  createdAt: users.createdAt,
  bannedUntil: users.bannedUntil,
  hasPassword: sql<number>`${users.password} <> ${NO_PASSWORD}`.as("has_password"),
  mfa: sql<number>`coalesce(${factorFields.totpStatus} = 'active', 0)`.as("mfa"),
  passkeys: sql<number>`(SELECT count(*) FROM ${passkeys} WHERE ${eq(passkeys.userId, users.id)})`.as("passkey_count"),
  identities:
    sql<string>`(SELECT json_group_array(${oauthIdentities.provider}) FROM ${oauthIdentities} WHERE ${eq(oauthIdentities.userId, users.id)})`.as(
      "identity_list",
    ),
  lastSignInAt: users.lastSignInAt,
};
export type UserRow = Awaited<ReturnType<typeof userRow>>[number];

function userRow(db: Database, userId: number) {
  return db.select(userFields).from(users).where(eq(users.id, userId));
}

/** The condition that account `userId` exists. */
const exists = (userId: number) => sql`EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${userId})`;

/**
 * A page of accounts by id: those whose address is `email` or starts with it (a range of the address's unique index),
 * after the id `after`; `limit` of them and one more (whether a next page follows).
 */
export function usersPage(db: Database, page: { email?: string; after?: number; limit: number }) {
  const { email, after, limit } = page;
  const prefix = email === undefined ? undefined : and(gte(users.email, email), lt(users.email, `${email}\u{10FFFF}`));
  return db
    .select(userFields)
    .from(users)
    .where(and(prefix, after === undefined ? undefined : gt(users.id, after)))
    .orderBy(orderedPage(limit, sql`${users.id}`));
}

/** An account and its live sessions (the latest used first), in one transaction; undefined when there is none. */
export async function userDetail(db: Database, userId: number, now: number) {
  const [[user], live] = await db.batch([
    userRow(db, userId),
    db
      .select({
        id: sessions.id,
        createdAt: sessions.createdAt,
        lastUsedAt: sessions.lastUsedAt,
        amr: sessions.amr,
        userAgent: sessions.userAgent,
      })
      .from(sessions)
      .where(and(eq(sessions.userId, userId), gt(sessions.expiresAt, now)))
      .orderBy(desc(sessions.lastUsedAt), asc(sessions.id)),
  ]);
  return user && { user, sessions: live };
}

/** The JSON array of the ids of the account's sessions, as SQL: what a statement that ends them all ends. */
const sessionIdsOf = (userId: number): SQL =>
  sql`json((SELECT json_group_array(${sessions.id}) FROM ${sessions} WHERE ${sessions.userId} = ${userId}))`;

/**
 * Suspends account `userId` until `until` (null: until an unban), and in the same transaction ends every session of
 * it and records `user.banned`: a sign-in racing it either opened its session before (which this ends) or finds the
 * ban in its own statement (core/gate.ts). The account as it is now; undefined when there is none.
 */
export async function banUser(
  ending: SessionEnding,
  audit: AuditTrail,
  ban: { userId: number; until: number | null; reason: string },
): Promise<UserRow | undefined> {
  const { db } = ending;
  const { userId, until, reason } = ban;
  const [, , [user]] = await db.batch([
    db
      .update(users)
      .set({ bannedUntil: until ?? BANNED_FOREVER, banReason: reason })
      .where(eq(users.id, userId)),
    ending.all(userId),
    userRow(db, userId),
    ...audit.record(
      {
        type: "user.banned",
        userId,
        data: { until: until === null ? null : new Date(until).toISOString(), reason },
      },
      exists(userId),
    ),
  ]);
  return user;
}

/** Ends account `userId`'s ban (its event only if one held at `now`): the account, or undefined when there is none. */
export async function unbanUser(db: Database, audit: AuditTrail, userId: number, now: number) {
  const banned = sql`EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${userId} AND ${users.bannedUntil} > ${now})`;
  const [[user]] = await db.batch([
    userRow(db, userId),
    ...audit.record({ type: "user.unbanned", userId }, banned),
    db.update(users).set({ bannedUntil: null, banReason: null }).where(eq(users.id, userId)),
  ]);
  return user && { ...user, bannedUntil: null };
}

/** Ends every session of account `userId`, with its event, without a ban: false when there is no such account. */
export async function signOutUser(ending: SessionEnding, audit: AuditTrail, userId: number): Promise<boolean> {
  const { db } = ending;
  const [[found]] = await db.batch([
    db.select({ id: users.id }).from(users).where(eq(users.id, userId)),
    ...audit.record(
      { type: "user.signed_out_by_admin", userId, data: { session_ids: sessionIdsOf(userId) } },
      exists(userId),
    ),
    ending.all(userId),
  ]);
  return found !== undefined;
}

/**
 * Deletes account `userId` and everything it owns, as its owner's deletion does (accountDeletion), with its
 * `user.deleted` event: false when there is no such account.
 */
export async function deleteUser(
  { db }: SessionEnding,
  audit: AuditTrail,
  userId: number,
  ownedElsewhere: OwnedElsewhere,
): Promise<boolean> {
  const guard = exists(userId);
  const email = sql`(SELECT ${users.email} FROM ${users} WHERE ${users.id} = ${userId})`;
  const recordDeleted = audit.record({ type: "user.deleted", userId, data: { email } }, guard);
  const results = await batchOf(db, accountDeletion(db, { id: userId, email }, ownedElsewhere, guard, recordDeleted));
  const deleted = results.at(-1);
  return Array.isArray(deleted) && deleted.length > 0;
}
