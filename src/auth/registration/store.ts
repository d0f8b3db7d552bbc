import { and, eq, sql } from "drizzle-orm";
import { changedRows, type AuditTrail } from "../../audit/events";
import { users } from "../schema";
import type { Database } from "../../types";
import { newAccount } from "../core/accounts";
import { codeStillIssued, deleteCode, issueCode } from "../core/codes";

/** The SQL of registration and verification: the new account, and its verification. */

/**
 * Creates an unverified account with the password hash, its registration mail counted as the first of the
 * hour's allowance, and issues its verification code. The unique index on e-mail decides between
 * concurrent registrations, not a prior read; an address another account gave up in an e-mail change it
 * can still undo is reserved for it. Undefined when the address is taken or reserved.
 */
export async function createAccount(
  db: Database,
  audit: AuditTrail,
  email: string,
  passwordHash: string,
  now: number,
): Promise<{ id: number; code: string | undefined } | undefined> {
  const [[created]] = await db.batch([
    newAccount(db, { email, password: passwordHash, isVerified: false, mailClaimedAt: now }, now),
    ...audit.record(
      {
        type: "user.registered",
        at: now,
        userId: sql`(SELECT ${users.id} FROM ${users} WHERE ${users.email} = ${email})`,
        data: { email, method: "password" },
      },
      changedRows(),
    ),
  ]);
  if (!created) return undefined;
  const [issued] = await issueCode(db, "verify_email", now, { id: created.id });
  return { id: created.id, code: issued?.code };
}

/**
 * Marks the account verified and uses its code up, only while the code is still the one claimed, with its event:
 * false when it was not.
 */
export async function markVerified(db: Database, audit: AuditTrail, userId: number, code: string): Promise<boolean> {
  const [verified] = await db.batch([
    db
      .update(users)
      .set({ isVerified: true })
      .where(and(eq(users.id, userId), codeStillIssued(userId, "verify_email", code)))
      .returning({ id: users.id }),
    ...audit.record(
      {
        type: "user.verified",
        userId,
        data: { email: sql`(SELECT ${users.email} FROM ${users} WHERE ${users.id} = ${userId})` },
      },
      changedRows(),
    ),
    deleteCode(db, userId, "verify_email", code),
  ]);
  return verified.length > 0;
}
