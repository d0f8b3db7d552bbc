import { and, eq, sql } from "drizzle-orm";
import { users } from "../../db/schema";
import type { Database } from "../../types";
import { reserved } from "../account/store";
import { codeStillIssued, deleteCode, issueCode } from "../codes";

/** The SQL of registration and verification: the new account, and its verification. */

/**
 * Creates an unverified account with the password hash, its registration mail counted as the first of the
 * hour's allowance, and issues its verification code. The unique index on e-mail decides between
 * concurrent registrations, not a prior read; an address another account gave up in an e-mail change it
 * can still undo is reserved for it. Undefined when the address is taken or reserved.
 */
export async function createAccount(db: Database, email: string, passwordHash: string, now: number): Promise<{ id: number; code: string | undefined } | undefined> {
  const [created] = await db
    .insert(users)
    .select(
      // Every column, in the table's order (drizzle's rule for INSERT … SELECT); a NULL id is assigned.
      db
        .select({
          id: sql<number>`NULL`.as("id"),
          email: sql<string>`${email}`.as("email"),
          password: sql<string>`${passwordHash}`.as("password"),
          isVerified: sql<boolean>`0`.as("isVerified"),
          createdAt: sql<number>`${now}`.as("createdAt"),
          lastMailAt: sql<number>`${now}`.as("lastMailAt"),
          mailWindowStart: sql<number>`${now}`.as("mailWindowStart"),
          mailsInWindow: sql<number>`1`.as("mailsInWindow"),
          signInEpoch: sql<number>`0`.as("sign_in_epoch"),
          // Set by the account's first passkey registration (auth/passkeys/store.ts).
          webauthnHandle: sql<string | null>`NULL`.as("webauthn_handle"),
        })
        .from(sql`(SELECT 1)`)
        .where(sql`NOT ${reserved(email, now)}`),
    )
    .onConflictDoNothing({ target: users.email })
    .returning({ id: users.id });
  if (!created) return undefined;
  const [issued] = await issueCode(db, "verify_email", now, { id: created.id });
  return { id: created.id, code: issued?.code };
}

/** Marks the account verified and uses its code up, only while the code is still the one claimed: false when it was not. */
export async function markVerified(db: Database, userId: number, code: string): Promise<boolean> {
  const [verified] = await db.batch([
    db
      .update(users)
      .set({ isVerified: true })
      .where(and(eq(users.id, userId), codeStillIssued(userId, "verify_email", code)))
      .returning({ id: users.id }),
    deleteCode(db, userId, "verify_email", code),
  ]);
  return verified.length > 0;
}
