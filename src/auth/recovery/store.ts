import { and, eq, gt, lt, sql } from "drizzle-orm";
import { loginFailures, oneTimeCodes, resetRequests, users } from "../schema";
import { changedRows, type AuditTrail } from "../../audit/events";
import type { Database } from "../../types";
import { passwordWrite } from "../core/accounts";
import { generateCode } from "../core/codes";
import { claimResetMail, resetMailAllowance, resetMailClaimed, resetMailWait } from "../limits/mail";
import type { SessionEnding } from "../core/sessions";
import { CODE_TTL_MS, MAX_CODE_ATTEMPTS } from "../policy";

/**
 * The SQL of account recovery. Each forgot-password request has its own id and, when it mails one, its
 * own code (a row of `reset_requests`); a reset names both, so the owner's code has its own
 * MAX_CODE_ATTEMPTS tries, which nobody guessing with another request's id can touch.
 */

/**
 * The request's code, stored under its id for CODE_TTL_MS, for the account of `email` once a reset mail
 * is claimed for the request (see claimResetMail): all in one transaction, so a request that may not mail
 * stores nothing. Returns the account and the code to mail, or, for an account whose allowance held the
 * mail back, why and for how long (the allowance as the batch left it).
 */
export async function requestResetCode(db: Database, email: string, client: string, requestId: string, now: number) {
  const [, , [issued], [account], allowances] = await db.batch([
    ...claimResetMail(db, email, client, requestId, now),
    db
      .insert(resetRequests)
      .select(
        // Every column, in the table's order (drizzle's rule for INSERT … SELECT).
        db
          .select({
            id: sql<string>`${requestId}`.as("id"),
            userId: users.id,
            code: sql<string>`${generateCode()}`.as("code"),
            expiresAt: sql<number>`${now + CODE_TTL_MS}`.as("expires_at"),
            attempts: sql<number>`0`.as("attempts"),
          })
          .from(users)
          .where(and(eq(users.email, email), resetMailClaimed(email, requestId))),
      )
      .returning({ userId: resetRequests.userId, code: resetRequests.code }),
    db.select({ id: users.id, isVerified: users.isVerified }).from(users).where(eq(users.email, email)),
    resetMailAllowance(db, email, client),
  ]);
  if (issued) return { issued: { ...issued, verified: account?.isVerified ?? false } };
  return { skipped: account ? resetMailWait(allowances, client, now) : undefined };
}

/**
 * Claims one try at the code of request `requestId` of the account of `email`, before the code is
 * compared: one conditional UPDATE that refuses when there is no such request of that account, or its
 * code is expired or void. However many guesses run at once, a code is compared at most
 * MAX_CODE_ATTEMPTS times; tries with other request ids never touch it.
 */
export async function claimResetTry(db: Database, email: string, requestId: string, now: number) {
  const [claim] = await db
    .update(resetRequests)
    .set({ attempts: sql`${resetRequests.attempts} + 1` })
    .where(
      and(
        eq(resetRequests.id, requestId),
        sql`${resetRequests.userId} = (SELECT ${users.id} FROM ${users} WHERE ${users.email} = ${email})`,
        lt(resetRequests.attempts, MAX_CODE_ATTEMPTS),
        gt(resetRequests.expiresAt, now),
      ),
    )
    .returning({ userId: resetRequests.userId, code: resetRequests.code });
  return claim;
}

/**
 * The reset in one transaction, every statement only while the request is still there with the code
 * claimed: the new password (which moves the sign-in epoch on); the address counts as verified (the code
 * proves the mailbox, which is also how the owner of an address someone else registered takes it back);
 * every session and the login lock end; and last, every reset request of the account is used up; its event is
 * recorded with it. False
 * when the request was used or replaced meanwhile.
 */
export async function resetPassword(
  ending: SessionEnding,
  audit: AuditTrail,
  reset: { userId: number; email: string; requestId: string; code: string; passwordHash: string },
  now: number,
): Promise<boolean> {
  const { db } = ending;
  const { userId, email, requestId, code, passwordHash } = reset;
  const stillIssued = sql`EXISTS (SELECT 1 FROM ${resetRequests} WHERE ${and(eq(resetRequests.id, requestId), eq(resetRequests.code, code))})`;
  const [done] = await db.batch([
    db
      .update(users)
      .set({ ...passwordWrite(passwordHash, now), isVerified: true })
      .where(and(eq(users.id, userId), stillIssued))
      .returning({ id: users.id }),
    ...audit.record({ type: "user.password_reset", userId }, changedRows()),
    ending.all(userId, stillIssued),
    db.delete(loginFailures).where(and(eq(loginFailures.email, email), stillIssued)),
    db
      .delete(oneTimeCodes)
      .where(and(eq(oneTimeCodes.userId, userId), eq(oneTimeCodes.purpose, "verify_email"), stillIssued)),
    db.delete(resetRequests).where(and(eq(resetRequests.userId, userId), stillIssued)),
  ]);
  return done.length > 0;
}
