import { and, eq, gt, gte, or, sql, type AnyColumn, type SQL } from "drizzle-orm";
import { emailChangeReverts, oauthIdentities, oneTimeCodes, passkeys, resetRequests, users } from "../schema";
import { NO_PASSWORD } from "../../lib/password";
import type { AuditTrail } from "../../audit/events";
import type { Database } from "../../types";
import { passwordWrite } from "../core/accounts";
import type { Removed } from "../core/address-mails";
import { removeFactorsAdded } from "../core/factor";
import type { SessionEnding } from "../core/sessions";
import { EMAIL_CHANGE_LOOKBACK_MS } from "../policy";

/**
 * The SQL of the undo of an e-mail change, which follows one rule (docs/threat-model/email-change.md): the account
 * goes back to what it was before whoever made the change could touch it.
 */

/** The live revert row of `tokenHash`, and the values of it every statement of the undo is keyed by. */
function revertOf(tokenHash: string, now: number) {
  const live = and(eq(emailChangeReverts.tokenHash, tokenHash), gt(emailChangeReverts.expiresAt, now))!;
  const column = (of: AnyColumn) => sql`(SELECT ${of} FROM ${emailChangeReverts} WHERE ${live})`;
  const changedAt = column(emailChangeReverts.createdAt);
  const sessionId = column(emailChangeReverts.sessionId);
  // What the undo removes: added by the changing session, whenever, or from the lookback before the change on.
  const added = ({ createdAt, addedBySession }: { createdAt: AnyColumn; addedBySession?: AnyColumn }) =>
    or(
      gte(createdAt, sql`${changedAt} - ${EMAIL_CHANGE_LOOKBACK_MS}`),
      addedBySession && sql`${addedBySession} = ${sessionId}`,
    )!;
  return {
    live,
    userId: column(emailChangeReverts.userId),
    oldEmail: column(emailChangeReverts.oldEmail),
    changedAt,
    added,
  };
}

/**
 * The undo of an e-mail change in one batch (one transaction), every statement keyed by the live revert
 * row of the token. The address goes back only while no other account holds it (none can register it
 * while the token lives: it is reserved); the password is cleared (the phisher knows it), every session
 * ends, the codes mailed to the address being undone die, its event is recorded, and every passkey, second factor and provider identity the
 * rule takes goes (see `added`). This token and those of later changes are used up; an earlier change's token stays
 * good, so a thief who chains changes cannot void the owner's. Answers the restored account, the address it was taken
 * from, what was removed and from when, or whether the token was live (its address is held by another account after all).
 */
export async function revertEmailChange(ending: SessionEnding, audit: AuditTrail, tokenHash: string, now: number) {
  const { db } = ending;
  const { live, userId, oldEmail, changedAt, added } = revertOf(tokenHash, now);
  const addressFree = sql`NOT EXISTS (SELECT 1 FROM ${users} AS holder WHERE holder.email = ${oldEmail} AND holder.id <> ${userId})`;
  // True once the account holds the old address again, which the second statement just made so.
  const reverted = sql`EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${userId} AND ${users.email} = ${oldEmail})`;
  const [removeFactors, removeRecoveryCodes] = removeFactorsAdded(db, userId, added, reverted);
  // Read first, in the same transaction: whether the token is live, and the address the account has now. What answers
  // rows comes first, so that its place in the batch is fixed.
  const [[token], [restored], passkeysGone, factorsGone, , identitiesGone] = await db.batch([
    db
      .select({ takenFrom: users.email, changedAt: emailChangeReverts.createdAt })
      .from(emailChangeReverts)
      .innerJoin(users, eq(users.id, emailChangeReverts.userId))
      .where(live),
    db
      .update(users)
      .set({ ...passwordWrite(NO_PASSWORD, now), email: sql`${oldEmail}`, isVerified: true })
      .where(and(eq(users.id, userId), addressFree))
      .returning({ id: users.id, email: users.email }),
    removedPasskeys(db, userId, added(passkeys), reverted),
    removeFactors,
    removeRecoveryCodes,
    // A provider linked through the new address (it vouched for it) came after the change: within the lookback.
    removedIdentities(db, userId, added({ createdAt: oauthIdentities.createdAt }), reverted),
    ending.all(userId, reverted),
    // Codes mailed to the address being undone must not act on the account any more.
    db.delete(oneTimeCodes).where(and(eq(oneTimeCodes.userId, userId), reverted)),
    db.delete(resetRequests).where(and(eq(resetRequests.userId, userId), reverted)),
    // While the revert row, which names the account and the address, is still there.
    ...audit.record({ type: "user.email_change_reverted", userId, data: { email: oldEmail } }, reverted),
    // This token and any later change's: an earlier change's token still undoes that one.
    db
      .delete(emailChangeReverts)
      .where(and(eq(emailChangeReverts.userId, userId), gte(emailChangeReverts.createdAt, changedAt), reverted)),
  ]);
  const removed: Removed = {
    passkeys: passkeysGone.map((row) => row.name),
    factors: factorsGone.map((row) => ({ kind: row.kind, active: row.status === "active" })),
    providers: identitiesGone.map((row) => row.provider),
  };
  // Not restored with a live token: another account holds the old address (nothing was written).
  return {
    restored: restored &&
      token && {
        ...restored,
        takenFrom: token.takenFrom,
        since: token.changedAt - EMAIL_CHANGE_LOOKBACK_MS,
        removed,
      },
    stillLive: token !== undefined,
  };
}

/** The statement that removes the account's passkeys `which` selects, while `condition` holds: their names. */
function removedPasskeys(db: Database, userId: SQL, which: SQL, condition: SQL) {
  return db
    .delete(passkeys)
    .where(and(eq(passkeys.userId, userId), which, condition))
    .returning({ name: passkeys.name });
}

/** The statement that unlinks the account's provider identities `which` selects, while `condition` holds. */
function removedIdentities(db: Database, userId: SQL, which: SQL, condition: SQL) {
  return db
    .delete(oauthIdentities)
    .where(and(eq(oauthIdentities.userId, userId), which, condition))
    .returning({ provider: oauthIdentities.provider });
}
