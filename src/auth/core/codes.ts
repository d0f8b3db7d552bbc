import { and, eq, sql, type SQL } from "drizzle-orm";
import { oneTimeCodes, users, type CodePurpose } from "../schema";
import type { Database } from "../../types";
import { claimMail, mailWait } from "../limits/mail";
import { claimWindowSql, windowWait } from "../limits/windows";
import { CODE_DIGITS, CODE_TRIES_PER_HOUR, CODE_TTL_MS, MAIL_COOLDOWN_MS, MAX_CODE_ATTEMPTS } from "../policy";

/**
 * One-time codes of every purpose (e-mail verification, and whatever else a mailed code proves): one
 * generator, one store (the `one_time_codes` table, a row per account and purpose) and one attempt rule.
 * Reset codes share the generator and the MAX_CODE_ATTEMPTS rule but are stored per request, bound to
 * the request's id (see recovery/).
 */

const MIN_CODE = 10 ** (CODE_DIGITS - 1);
const CODE_RANGE = 9 * MIN_CODE; // 100000..999999
// The largest multiple of CODE_RANGE below 2^32: draws at or above it are redrawn, so every code is
// equally likely (a plain `% CODE_RANGE` would favour the low codes).
const UNBIASED_LIMIT = Math.floor(2 ** 32 / CODE_RANGE) * CODE_RANGE;

/** A CODE_DIGITS-digit code, uniform over 100000..999999. */
export function generateCode(): string {
  const draw = new Uint32Array(1);
  for (;;) {
    crypto.getRandomValues(draw);
    const value = draw[0]!;
    if (value < UNBIASED_LIMIT) return String(MIN_CODE + (value % CODE_RANGE));
  }
}

/** Compares a submitted code with the stored one in time that does not depend on where they differ. */
export function codesMatch(submitted: string, stored: string): boolean {
  const encoder = new TextEncoder();
  const a = encoder.encode(submitted);
  const b = encoder.encode(stored);
  // timingSafeEqual needs equal lengths; a length mismatch is no secret (codes have a fixed length).
  if (a.byteLength !== b.byteLength) return false;
  return crypto.subtle.timingSafeEqual(a, b);
}

/** Which account a code is for: by id (a signed-in caller), or by address, only while unverified when `unverified`. */
export type CodeAccount = { id: number } | { email: string; unverified?: true };

function accountOf(account: CodeAccount): SQL {
  if ("id" in account) return eq(users.id, account.id);
  return and(eq(users.email, account.email), account.unverified ? eq(users.isVerified, false) : undefined)!;
}

const ofCode = (userId: number, purpose: CodePurpose, code: string) =>
  and(eq(oneTimeCodes.userId, userId), eq(oneTimeCodes.purpose, purpose), eq(oneTimeCodes.code, code));

/**
 * Issues the code of `purpose` of the account `account` selects, for 15 more minutes: the live code again
 * when there is one for the same `newEmail` (a new code would kill the one in a slower earlier mail),
 * with the tries it has had; otherwise a new code with none. One upsert whose CASE reads the row as it is
 * at that moment, so a concurrent wrong guess can never be written back out of existence. Returns the
 * account and its code, or nothing when `account` selects no account. Batchable.
 */
function issueCodeWhere(
  db: Database,
  purpose: CodePurpose,
  now: number,
  account: SQL | undefined,
  newEmail: string | null = null,
) {
  const live = sql`(${oneTimeCodes.attempts} < ${MAX_CODE_ATTEMPTS} AND ${oneTimeCodes.expiresAt} > ${now} AND ${oneTimeCodes.newEmail} IS excluded.new_email)`;
  return db
    .insert(oneTimeCodes)
    .select(
      // Every column, in the table's order (drizzle's rule for INSERT … SELECT).
      db
        .select({
          userId: users.id,
          purpose: sql<CodePurpose>`${purpose}`.as("purpose"),
          code: sql<string>`${generateCode()}`.as("code"),
          expiresAt: sql<number>`${now + CODE_TTL_MS}`.as("expires_at"),
          attempts: sql<number>`0`.as("attempts"),
          windowStart: sql<number>`0`.as("window_start"),
          windowAttempts: sql<number>`0`.as("window_attempts"),
          newEmail: sql<string | null>`${newEmail}`.as("new_email"),
        })
        .from(users)
        .where(account),
    )
    .onConflictDoUpdate({
      target: [oneTimeCodes.userId, oneTimeCodes.purpose],
      set: {
        code: sql`CASE WHEN ${live} THEN ${oneTimeCodes.code} ELSE excluded.code END`,
        attempts: sql`CASE WHEN ${live} THEN ${oneTimeCodes.attempts} ELSE 0 END`,
        expiresAt: sql`excluded.expires_at`,
        newEmail: sql`excluded.new_email`,
      },
    })
    .returning({ userId: oneTimeCodes.userId, code: oneTimeCodes.code });
}

/**
 * issueCodeWhere for the account `to`: the code of a registration, whose mail the new account's row has already
 * claimed.
 */
export function issueCode(db: Database, purpose: CodePurpose, now: number, to: CodeAccount) {
  return issueCodeWhere(db, purpose, now, accountOf(to));
}

/** Why an account's mail was not sent: its cooldown since the last mail, or its hourly cap. */
export type MailSkipped = "mail_cooldown" | "hourly_mail_cap";

/**
 * A code to mail, in one round trip: claims one mail of the allowance of the account `account` selects
 * (see claimMail) and, only if that claim succeeded, issues the code of `purpose`. `issued` is what to
 * mail; without it, `waitMs` tells how long the allowance is used up (0: no such account) and `skipped`
 * which part of it.
 */
export async function codeToMail(
  db: Database,
  to: CodeAccount,
  purpose: CodePurpose,
  now: number,
  newEmail: string | null = null,
): Promise<{ issued?: { userId: number; code: string }; waitMs: number; skipped?: MailSkipped }> {
  const account = accountOf(to);
  const [[claimed], [issued], [state]] = await db.batch([
    claimMail(db, account, now),
    // Runs in the same transaction right after the claim: the account's last mail is `now` only if the
    // claim went through (or a request of the same millisecond claimed it, and that one mails).
    issueCodeWhere(db, purpose, now, and(account, eq(users.lastMailAt, now)), newEmail),
    db
      .select({ lastMailAt: users.lastMailAt, start: users.mailWindowStart, count: users.mailsInWindow })
      .from(users)
      .where(account),
  ]);
  if (claimed && issued) return { issued, waitMs: 0 };
  if (!state) return { waitMs: 0 };
  // Lost the claim to a concurrent request that just mailed: a full cooldown.
  const waitMs = mailWait(state.lastMailAt, state, now) || MAIL_COOLDOWN_MS;
  return { waitMs, skipped: state.lastMailAt > now - MAIL_COOLDOWN_MS ? "mail_cooldown" : "hourly_mail_cap" };
}

export type CodeClaim =
  | { outcome: "claimed"; userId: number; code: string; newEmail: string | null }
  /** The hourly tries at codes of this purpose are used up. */
  | { outcome: "throttled"; waitMs: number }
  /** No account, no code, or the code has expired or is void. */
  | { outcome: "invalid" };

/**
 * Claims one try at the live code of `purpose` of the account `account` selects, before the code is
 * compared: one conditional UPDATE that refuses when the code is void or expired or the account's hourly
 * tries are used up, and otherwise counts the try against both. However many guesses run at once, a
 * code is compared at most MAX_CODE_ATTEMPTS times, and an account's codes CODE_TRIES_PER_HOUR times an
 * hour. The read batched after it only tells a refusal's reason.
 */
export async function claimCodeAttempt(
  db: Database,
  of: CodeAccount,
  purpose: CodePurpose,
  now: number,
): Promise<CodeClaim> {
  const account = accountOf(of);
  const window = claimWindowSql(oneTimeCodes.windowStart, oneTimeCodes.windowAttempts, CODE_TRIES_PER_HOUR, now);
  const ofThis = and(
    eq(oneTimeCodes.purpose, purpose),
    sql`${oneTimeCodes.userId} = (SELECT ${users.id} FROM ${users} WHERE ${account})`,
  );
  const [claimed, [state]] = await db.batch([
    db
      .update(oneTimeCodes)
      .set({ attempts: sql`${oneTimeCodes.attempts} + 1`, windowStart: window.start, windowAttempts: window.count })
      .where(
        and(
          ofThis,
          sql`${oneTimeCodes.attempts} < ${MAX_CODE_ATTEMPTS}`,
          sql`${oneTimeCodes.expiresAt} > ${now}`,
          window.hasRoom,
        ),
      )
      .returning({ userId: oneTimeCodes.userId, code: oneTimeCodes.code, newEmail: oneTimeCodes.newEmail }),
    db.select({ start: oneTimeCodes.windowStart, count: oneTimeCodes.windowAttempts }).from(oneTimeCodes).where(ofThis),
  ]);
  const [claim] = claimed;
  if (claim) return { outcome: "claimed", ...claim };
  const waitMs = state ? windowWait(state, CODE_TRIES_PER_HOUR, now) : 0;
  return waitMs > 0 ? { outcome: "throttled", waitMs } : { outcome: "invalid" };
}

/**
 * The condition, for the statement that acts on a code, that the code is still the account's code of
 * `purpose` (not used or replaced since it was claimed). Batch it with `deleteCode`, which uses it up.
 */
export function codeStillIssued(userId: number, purpose: CodePurpose, code: string): SQL {
  return sql`EXISTS (SELECT 1 FROM ${oneTimeCodes} WHERE ${ofCode(userId, purpose, code)})`;
}

/** Uses up the account's code of `purpose`, if it is still `code`. */
export function deleteCode(db: Database, userId: number, purpose: CodePurpose, code: string) {
  return db.delete(oneTimeCodes).where(ofCode(userId, purpose, code));
}
