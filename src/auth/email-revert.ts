import { and, eq, gt, sql } from "drizzle-orm";
import { Hono } from "hono";
import { emailChangeReverts, oneTimeCodes, resetRequests, sessions, users } from "../db/schema";
import { badJson, describeRoute, text } from "../lib/describe";
import { maskEmail } from "../lib/log";
import { NO_PASSWORD } from "../lib/password";
import { sha256Hex } from "../lib/crypto";
import { base64url } from "../lib/encoding";
import { DAY } from "../lib/units";
import { jsonBody } from "../lib/validation";
import type { AppEnv, Database } from "../types";
import { accountErrors, accountsTag } from "./docs";
import { AuthMessage } from "./messages";
import { RevertEmailChangeBody } from "./schemas";

/**
 * Undoing an e-mail change. A change is confirmed by the new mailbox alone, so a phished password would
 * be a permanent takeover; the notice to the old address therefore carries a revert token, valid
 * EMAIL_CHANGE_REVERT_TTL_MS, that puts the old address back, ends every session and clears the
 * password (the phisher knows it): the owner then sets a new one with forgot-password, through the
 * mailbox they just got back. The token is 128 random bits (nothing to guess within the per-client
 * limit), stored as its SHA-256 only, and used up by the one batch that reverts.
 */
export const EMAIL_CHANGE_REVERT_TTL_MS = 7 * DAY;

/** A new revert token, and what is stored of it. */
export async function newRevertToken(): Promise<{ token: string; tokenHash: string }> {
  const token = base64url(crypto.getRandomValues(new Uint8Array(16)));
  return { token, tokenHash: await sha256Hex(token) };
}

/**
 * The revert in one batch (one transaction), every statement keyed by the live revert row of the token,
 * which the last statement deletes: of concurrent reverts with one token exactly one changes anything.
 * The address goes back only while no other account holds it.
 */
function revertBatch(db: Database, tokenHash: string, now: number) {
  const live = and(eq(emailChangeReverts.tokenHash, tokenHash), gt(emailChangeReverts.expiresAt, now));
  const userId = sql`(SELECT ${emailChangeReverts.userId} FROM ${emailChangeReverts} WHERE ${live})`;
  const oldEmail = sql`(SELECT ${emailChangeReverts.oldEmail} FROM ${emailChangeReverts} WHERE ${live})`;
  const addressFree = sql`NOT EXISTS (SELECT 1 FROM ${users} AS holder WHERE holder.email = ${oldEmail} AND holder.id <> ${userId})`;
  // True once the account holds the old address again, which the first statement just made so.
  const reverted = sql`EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${userId} AND ${users.email} = ${oldEmail})`;
  return db.batch([
    db
      .update(users)
      .set({ email: sql`${oldEmail}`, password: NO_PASSWORD, isVerified: true })
      .where(and(eq(users.id, userId), addressFree))
      .returning({ id: users.id, email: users.email }),
    db.delete(sessions).where(and(eq(sessions.userId, userId), reverted)),
    // Codes mailed to the address being undone must not act on the account any more.
    db.delete(oneTimeCodes).where(and(eq(oneTimeCodes.userId, userId), reverted)),
    db.delete(resetRequests).where(and(eq(resetRequests.userId, userId), reverted)),
    // This token and any later change's: the address it names is gone from the account.
    db.delete(emailChangeReverts).where(and(eq(emailChangeReverts.userId, userId), reverted)),
    db.select({ userId: emailChangeReverts.userId }).from(emailChangeReverts).where(live),
  ]);
}

export const emailRevert = new Hono<AppEnv>().post(
  "/revert-email-change",
  describeRoute({
    tags: accountsTag,
    summary: "Undo an e-mail change",
    description:
      `No bearer token: the revert token from the notice mailed to the old address (valid ${EMAIL_CHANGE_REVERT_TTL_MS / DAY} days) is the proof. ` +
      "Puts the old address back, ends every session and clears the password; set a new one with forgot-password.",
    requestExample: { token: "q3Jx8v0bYV3oQ1m2k5nR7w" },
    responses: {
      "200": text("Undone", AuthMessage.emailChangeReverted),
      "400": text("Missing or malformed token", AuthMessage.tokenRequired, AuthMessage.tokenString, ...badJson),
      "401": text("Unknown, used or expired token", AuthMessage.invalidRevertToken),
      "409": text("Another account has registered the old address meanwhile", AuthMessage.revertAddressTaken),
      ...accountErrors,
    },
  }),
  jsonBody(RevertEmailChangeBody),
  async (c) => {
    const { token } = c.req.valid("json");
    const { db, log } = c.var;
    const [[restored], , , , , [stillLive]] = await revertBatch(db, await sha256Hex(token), Date.now());
    if (restored) {
      log.info("email_change_reverted", { userId: restored.id, email: maskEmail(restored.email) });
      return c.text(AuthMessage.emailChangeReverted, 200);
    }
    return stillLive ? c.text(AuthMessage.revertAddressTaken, 409) : c.text(AuthMessage.invalidRevertToken, 401);
  },
);
