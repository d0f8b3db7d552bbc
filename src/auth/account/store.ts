import { and, eq, gt, gte, ne, sql, type SQL } from "drizzle-orm";
import { changedRows, type AuditTrail } from "../../audit/events";
import { emailChangeReverts, oneTimeCodes, passkeys, resetRequests, users } from "../schema";
import type { AccessClaims } from "../../lib/access-token";
import { NO_PASSWORD } from "../../lib/password";
import { batchOf } from "../../db/client";
import type { Database } from "../../types";
import { liveSession } from "../caller";
import { accountDeletion, passwordWrite, reserved, type OwnedElsewhere } from "../core/accounts";
import { codeStillIssued, deleteCode } from "../core/codes";
import { removeFactorsAddedSince } from "../core/factor";
import type { SessionEnding } from "../core/sessions";
import { EMAIL_CHANGE_REVERT_TTL_MS } from "../policy";

/** The SQL of the caller's own account: its password, its address (change and undo) and its deletion. */

/**
 * Sets the caller's password and ends every other session, while the caller's session is live, with its event: false
 * when it was not.
 */
export async function changePassword(
  ending: SessionEnding,
  audit: AuditTrail,
  caller: AccessClaims,
  hash: string,
  now: number,
): Promise<boolean> {
  const { db } = ending;
  const live = liveSession(caller, now);
  const [changed] = await db.batch([
    db
      .update(users)
      .set(passwordWrite(hash, now))
      .where(and(eq(users.id, caller.userId), live))
      .returning({ id: users.id }),
    ...audit.record({ type: "user.password_changed", userId: caller.userId }, changedRows()),
    ending.others(caller, live),
  ]);
  return changed.length > 0;
}

/**
 * Deletes the caller's account and what it owns in one transaction (accountDeletion), each statement only while the
 * caller's session is live, with its event. False when the session was not live.
 */
export async function deleteAccount(
  { db }: SessionEnding,
  audit: AuditTrail,
  caller: AccessClaims,
  email: string,
  ownedElsewhere: OwnedElsewhere,
  now: number,
): Promise<boolean> {
  const live = liveSession(caller, now);
  const recordDeleted = audit.record({ type: "user.deleted", userId: caller.userId, data: { email } }, live);
  const results = await batchOf(
    db,
    accountDeletion(db, { id: caller.userId, email }, ownedElsewhere, live, recordDeleted),
  );
  const deleted = results.at(-1);
  return Array.isArray(deleted) && deleted.length > 0;
}

/** The confirmation of an e-mail change: the account, its old address and the code it claimed. */
export interface EmailSwitch {
  caller: AccessClaims;
  oldEmail: string;
  newEmail: string;
  code: string;
  revertTokenHash: string;
}

/**
 * The switch to the new address, in one transaction: the address changes (only while the code is still
 * the one claimed, the session live and the address free: the unique index is never hit), then, only if
 * it did, its event is recorded, every other session and every other code of the account ends, and the old address gets its
 * undo; this code is used up either way. False when nothing switched.
 */
export async function switchEmail(
  ending: SessionEnding,
  audit: AuditTrail,
  { caller, oldEmail, newEmail, code, revertTokenHash }: EmailSwitch,
  now: number,
): Promise<boolean> {
  const { db } = ending;
  const addressFree = sql`NOT EXISTS (SELECT 1 FROM ${users} WHERE ${users.email} = ${newEmail}) AND NOT ${reserved(newEmail, now, caller.userId)}`;
  const switched = sql`EXISTS (SELECT 1 FROM ${users} WHERE ${and(eq(users.id, caller.userId), eq(users.email, newEmail))})`;
  const stillIssued = codeStillIssued(caller.userId, "change_email", code);
  const [done] = await db.batch([
    db
      .update(users)
      .set({ email: newEmail, isVerified: true })
      .where(and(eq(users.id, caller.userId), stillIssued, liveSession(caller, now), addressFree))
      .returning({ id: users.id }),
    ...audit.record(
      { type: "user.email_changed", userId: caller.userId, data: { old_email: oldEmail, new_email: newEmail } },
      changedRows(),
    ),
    ending.others(caller, switched),
    // Codes mailed to the old address (a password reset, say) must not act on the account any more.
    db
      .delete(oneTimeCodes)
      .where(and(eq(oneTimeCodes.userId, caller.userId), ne(oneTimeCodes.purpose, "change_email"), switched)),
    db.delete(resetRequests).where(and(eq(resetRequests.userId, caller.userId), switched)),
    storeRevert(
      db,
      {
        tokenHash: revertTokenHash,
        userId: caller.userId,
        oldEmail,
        createdAt: now,
        expiresAt: now + EMAIL_CHANGE_REVERT_TTL_MS,
      },
      switched,
    ),
    deleteCode(db, caller.userId, "change_email", code),
  ]);
  return done.length > 0;
}

/** Stores the undo of a change for the old address, only when `condition` holds (INSERT … SELECT). */
function storeRevert(db: Database, revert: typeof emailChangeReverts.$inferInsert, condition: SQL) {
  return db.insert(emailChangeReverts).select(
    db
      .select({
        tokenHash: sql<string>`${revert.tokenHash}`.as("token_hash"),
        userId: sql<number>`${revert.userId}`.as("user_id"),
        oldEmail: sql<string>`${revert.oldEmail}`.as("old_email"),
        createdAt: sql<number>`${revert.createdAt}`.as("created_at"),
        expiresAt: sql<number>`${revert.expiresAt}`.as("expires_at"),
      })
      .from(sql`(SELECT 1)`)
      .where(condition),
  );
}

/**
 * The undo of an e-mail change in one batch (one transaction), every statement keyed by the live revert
 * row of the token. The address goes back only while no other account holds it (none can register it
 * while the token lives: it is reserved); the password is cleared (the phisher knows it), every session
 * ends, the codes mailed to the address being undone die, and every second factor and passkey added since
 * the change goes (a thief's TOTP must not keep the owner out, nor their passkey sign in). This token and those of
 * later changes are used up; an earlier change's token stays good, so a thief who chains changes cannot void the
 * owner's. Answers the restored account and the address it was taken from, or whether the token was live (its address
 * is held by another account after all).
 */
export async function revertEmailChange(ending: SessionEnding, audit: AuditTrail, tokenHash: string, now: number) {
  const { db } = ending;
  const live = and(eq(emailChangeReverts.tokenHash, tokenHash), gt(emailChangeReverts.expiresAt, now));
  const ofToken = (
    column: typeof emailChangeReverts.userId | typeof emailChangeReverts.oldEmail | typeof emailChangeReverts.createdAt,
  ) => sql`(SELECT ${column} FROM ${emailChangeReverts} WHERE ${live})`;
  const [userId, oldEmail, changedAt] = [
    ofToken(emailChangeReverts.userId),
    ofToken(emailChangeReverts.oldEmail),
    ofToken(emailChangeReverts.createdAt),
  ];
  const addressFree = sql`NOT EXISTS (SELECT 1 FROM ${users} AS holder WHERE holder.email = ${oldEmail} AND holder.id <> ${userId})`;
  // True once the account holds the old address again, which the second statement just made so.
  const reverted = sql`EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${userId} AND ${users.email} = ${oldEmail})`;
  // Read first, in the same transaction: whether the token is live, and the address the account has now.
  const [[token], [restored]] = await db.batch([
    db
      .select({ takenFrom: users.email })
      .from(emailChangeReverts)
      .innerJoin(users, eq(users.id, emailChangeReverts.userId))
      .where(live),
    db
      .update(users)
      .set({ ...passwordWrite(NO_PASSWORD, now), email: sql`${oldEmail}`, isVerified: true })
      .where(and(eq(users.id, userId), addressFree))
      .returning({ id: users.id, email: users.email }),
    ...audit.record({ type: "user.email_change_reverted", userId, data: { email: oldEmail } }, changedRows()),
    ending.all(userId, reverted),
    // Codes mailed to the address being undone must not act on the account any more.
    db.delete(oneTimeCodes).where(and(eq(oneTimeCodes.userId, userId), reverted)),
    db.delete(resetRequests).where(and(eq(resetRequests.userId, userId), reverted)),
    ...removeFactorsAddedSince(db, userId, changedAt, reverted),
    removePasskeysAddedSince(db, userId, changedAt, reverted),
    // This token and any later change's: an earlier change's token still undoes that one.
    db
      .delete(emailChangeReverts)
      .where(and(eq(emailChangeReverts.userId, userId), gte(emailChangeReverts.createdAt, changedAt), reverted)),
  ]);
  // Not restored with a live token: another account holds the old address (nothing was written).
  return { restored: restored && token && { ...restored, takenFrom: token.takenFrom }, stillLive: token !== undefined };
}

/**
 * The statement that removes the passkeys the account added at or after `since`, while `condition` holds:
 * the undo of an e-mail change takes away what whoever changed the address added (account/store.ts).
 */
function removePasskeysAddedSince(db: Database, userId: number | SQL, since: number | SQL, condition: SQL) {
  return db.delete(passkeys).where(and(eq(passkeys.userId, userId), gte(passkeys.createdAt, since), condition));
}
