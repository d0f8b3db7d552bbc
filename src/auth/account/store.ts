import { and, eq, ne, sql, type SQL } from "drizzle-orm";
import { changedRows, type AuditTrail } from "../../audit/events";
import { emailChangeReverts, oneTimeCodes, resetRequests, users } from "../schema";
import type { AccessClaims } from "../../lib/access-token";
import { batchOf } from "../../db/client";
import type { Database } from "../../types";
import { liveSession } from "../caller";
import { accountDeletion, passwordWrite, reserved, type OwnedElsewhere } from "../core/accounts";
import { codeStillIssued, deleteCode } from "../core/codes";
import type { SessionEnding } from "../core/sessions";
import { EMAIL_CHANGE_REVERT_TTL_MS } from "../policy";

/** The SQL of the caller's own account: its password, its address (the change; its undo is revert-store.ts) and its deletion. */

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
        sessionId: caller.sessionId,
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
        sessionId: sql<string | null>`${revert.sessionId ?? null}`.as("session_id"),
      })
      .from(sql`(SELECT 1)`)
      .where(condition),
  );
}
