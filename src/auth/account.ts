import { and, eq, ne, sql } from "drizzle-orm";
import { Hono } from "hono";
import { emailChangeReverts, loginFailures, noteClocks, notes, noteTombstones, oneTimeCodes, resetRequests, sessions, users } from "../db/schema";
import { badJson, describeRoute, json, ref, text, throttled } from "../lib/describe";
import { tooManyRequests } from "../lib/http";
import { maskEmail } from "../lib/log";
import { hashPassword } from "../lib/password";
import type { AccessClaims } from "../lib/access-token";
import { MINUTE } from "../lib/units";
import { jsonBody } from "../lib/validation";
import type { AppEnv } from "../types";
import { liveSession, requireAccessToken, unauthorized } from "./caller";
import { codeTryBudget } from "./code-budget";
import { claimCodeAttempt, CODE_TTL_MS, codesMatch, codeStillIssued, codeToMail, deleteCode } from "./codes";
import { accountErrors, bearer, bearerErrors, passwordChecked, passwordRules } from "./docs";
import { EMAIL_CHANGE_REVERT_TTL_MS, newRevertToken } from "./email-revert";
import { EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR, EMAIL_CHANGE_TRIES_PER_TARGET_PER_HOUR } from "./limits";
import { mailerOf, sendEmailChangeCode, sendEmailChangedNotice, sendPasswordChangedNotice } from "./mails";
import { AuthMessage } from "./messages";
import { callerAccount, reauthenticate } from "./reauth";
import { ChangeEmailBody, ChangePasswordBody, ConfirmEmailChangeBody, DeleteAccountBody } from "./schemas";
import { claimWindow, releaseWindow, waitFor, windowState } from "./windows";
import type { MeJson } from "./shapes";

/** The window of e-mail change codes mailed to `address`, or of tries at proving it, across all accounts. */
function targetWindow(what: "codes" | "tries", address: string): string {
  return `email_change_${what}:${address}`;
}

/** Every session of the user but the caller's. */
function otherSessions(caller: AccessClaims) {
  return and(eq(sessions.userId, caller.userId), ne(sessions.id, caller.sessionId));
}

/** The logged-in user's own account: read it, change its password or address, delete it. */
export const account = new Hono<AppEnv>()
  .get(
    "/me",
    describeRoute({ ...bearer, summary: "Your account", responses: { "200": json("The caller's account", ref("Me")), ...bearerErrors } }),
    requireAccessToken, async (c) => {
    const user = await callerAccount(c, c.var.caller);
    if (!user) return unauthorized(c);
    const me: MeJson = {
      id: user.id,
      email: user.email,
      verified: user.isVerified,
      created_at: new Date(user.createdAt).toISOString(),
      mfa: { totp: user.factorStatus === "active", recovery_codes_remaining: user.factorStatus === "active" ? user.recoveryCodes : 0 },
    };
    return c.json(me, 200);
  })

  .post(
    "/change-password",
    describeRoute({
      ...bearer,
      summary: "Change your password",
      description: "Needs the current password. Ends every other session and mails a notice.",
      requestExample: { current_password: "correct horse battery", new_password: "a new long password" },
      responses: {
        "200": text("Changed", AuthMessage.passwordChanged),
        "400": text("Missing or malformed fields", AuthMessage.changePasswordRequired, AuthMessage.changePasswordStrings, ...passwordRules, ...badJson),
        ...passwordChecked,
      },
    }),
    requireAccessToken,
    jsonBody(ChangePasswordBody), async (c) => {
    const { current_password: currentPassword, new_password: newPassword, code: stepUpCode } = c.req.valid("json");
    const { config, db, log } = c.var;
    const caller = c.var.caller;

    const confirmed = await reauthenticate(c, { password: currentPassword, code: { value: stepUpCode } });
    if ("refused" in confirmed) return confirmed.refused;
    const hash = await hashPassword(newPassword, config.bcryptCost);
    const now = Date.now();
    const [changed] = await db.batch([
      db.update(users).set({ password: hash }).where(and(eq(users.id, caller.userId), liveSession(caller, now))).returning({ id: users.id }),
      db.delete(sessions).where(and(otherSessions(caller), liveSession(caller, now))),
    ]);
    if (changed.length === 0) return unauthorized(c);
    log.info("password_changed", { userId: caller.userId });
    await sendPasswordChangedNotice(mailerOf(c.var), confirmed.account.email);
    return c.text(AuthMessage.passwordChanged, 200);
  })

  .post(
    "/change-email",
    describeRoute({
      ...bearer,
      summary: "Ask to change your e-mail address",
      description: `Needs the password; mails a 6-digit code to the new address (valid ${CODE_TTL_MS / MINUTE} minutes), within the account's mail allowance.`,
      requestExample: { password: "correct horse battery", new_email: "ada@new.example" },
      responses: {
        "200": text("Code sent", AuthMessage.emailChangeSent),
        "400": text(
          "Missing or malformed fields, or the current address",
          AuthMessage.changeEmailRequired,
          AuthMessage.changeEmailStrings,
          AuthMessage.invalidEmail,
          AuthMessage.sameEmail,
          ...badJson,
        ),
        "409": text("The new address belongs to another account", AuthMessage.userExists),
        ...passwordChecked,
        "429": throttled(
          text(
            `Mail allowance used up, ${EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR} codes to this address in the hour already (all accounts together), or the per-client limit`,
            AuthMessage.emailChangeThrottled,
            AuthMessage.clientThrottled,
          ),
        ),
      },
    }),
    requireAccessToken,
    jsonBody(ChangeEmailBody), async (c) => {
    const { password, new_email: newEmail, code: stepUpCode } = c.req.valid("json");
    const { db, log } = c.var;
    const caller = c.var.caller;

    const confirmed = await reauthenticate(c, { password, code: { value: stepUpCode } });
    if ("refused" in confirmed) return confirmed.refused;
    if (newEmail === confirmed.account.email) return c.text(AuthMessage.sameEmail, 400);
    // The same answer as register's 409 tells no more than register does. A registration of the
    // address between here and the confirmation is caught there.
    const [taken] = await db.select({ id: users.id }).from(users).where(eq(users.email, newEmail));
    if (taken) return c.text(AuthMessage.userExists, 409);

    // The target's own cap first (all accounts together), then the account's mail allowance, which the
    // code shares with every other mail of the account; a slot of the target's is given back if refused.
    const now = Date.now();
    const target = targetWindow("codes", newEmail);
    const [[slot], [targetState]] = await db.batch([
      claimWindow(db, target, EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR, now),
      windowState(db, target),
    ]);
    if (!slot) {
      log.warn("email_change_target_throttled", { newEmail: maskEmail(newEmail) });
      return tooManyRequests(c, waitFor(targetState, EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR, now), AuthMessage.emailChangeThrottled);
    }
    const { issued, waitMs } = await codeToMail(db, eq(users.id, caller.userId), "change_email", now, newEmail);
    if (!issued) {
      await releaseWindow(db, target, slot.windowStart);
      return tooManyRequests(c, waitMs, AuthMessage.emailChangeThrottled);
    }
    log.info("email_change_requested", { userId: caller.userId, newEmail: maskEmail(newEmail) });
    await sendEmailChangeCode(mailerOf(c.var), newEmail, issued.code);
    return c.text(AuthMessage.emailChangeSent, 200);
  })

  .post(
    "/confirm-email-change",
    describeRoute({
      ...bearer,
      summary: "Confirm the new e-mail address",
      description: "Switches the address to the one the code was mailed to, mails a notice to the old one, and ends every other session.",
      requestExample: { token: "123456" },
      responses: {
        "200": text("Changed", AuthMessage.emailChanged),
        "400": text("Missing or malformed token", AuthMessage.tokenRequired, AuthMessage.tokenString, ...badJson),
        "401": text("Wrong, expired or voided code, or an invalid access token", AuthMessage.invalidConfirmationCode, AuthMessage.invalidAccessToken),
        "409": text("The address was registered by someone else meanwhile", AuthMessage.userExists),
        ...accountErrors,
        "429": throttled(
          text(
            `Too many tries (this account's, ${EMAIL_CHANGE_TRIES_PER_TARGET_PER_HOUR} an hour at proving this address across all accounts, or the whole service's failed code tries), or the per-client limit`,
            AuthMessage.codeThrottled,
            AuthMessage.codeBudgetExhausted,
            AuthMessage.clientThrottled,
          ),
        ),
      },
    }),
    requireAccessToken,
    jsonBody(ConfirmEmailChangeBody),
    codeTryBudget,
    async (c) => {
    const { token } = c.req.valid("json");
    const { db, log } = c.var;
    const caller = c.var.caller;

    const account = await callerAccount(c, caller);
    if (!account) return unauthorized(c);
    const now = Date.now();
    const claim = await claimCodeAttempt(db, eq(users.id, caller.userId), "change_email", now);
    if (claim.outcome === "throttled") return tooManyRequests(c, claim.waitMs, AuthMessage.codeThrottled);
    if (claim.outcome === "invalid" || !claim.newEmail) return c.text(AuthMessage.invalidConfirmationCode, 401);
    // A try at proving the target address also claims a slot of the target's own window (all accounts
    // together), before the code is compared; a right code gives it back.
    const target = targetWindow("tries", claim.newEmail);
    const [[slot], [targetState]] = await db.batch([claimWindow(db, target, EMAIL_CHANGE_TRIES_PER_TARGET_PER_HOUR, now), windowState(db, target)]);
    if (!slot) {
      log.warn("email_change_target_throttled", { newEmail: maskEmail(claim.newEmail) });
      return tooManyRequests(c, waitFor(targetState, EMAIL_CHANGE_TRIES_PER_TARGET_PER_HOUR, now), AuthMessage.codeThrottled);
    }
    if (!codesMatch(token, claim.code)) return c.text(AuthMessage.invalidConfirmationCode, 401);
    await releaseWindow(db, target, slot.windowStart);

    const { code, newEmail } = claim;
    const revert = await newRevertToken();
    const stillIssued = codeStillIssued(caller.userId, "change_email", code);
    const addressFree = sql`NOT EXISTS (SELECT 1 FROM ${users} WHERE ${users.email} = ${newEmail})`;
    const switchedTo = sql`EXISTS (SELECT 1 FROM ${users} WHERE ${and(eq(users.id, caller.userId), eq(users.email, newEmail))})`;
    // One transaction: the switch (only while the code is still the one claimed, the session live and
    // the address free: the unique index is never hit), then, only if it happened, every other session
    // and every other code of the account ends; this code is used up either way.
    const [switched] = await db.batch([
      db
        .update(users)
        .set({ email: newEmail, isVerified: true })
        .where(and(eq(users.id, caller.userId), stillIssued, liveSession(caller, now), addressFree))
        .returning({ id: users.id }),
      db.delete(sessions).where(and(otherSessions(caller), switchedTo)),
      // Codes mailed to the old address (a password reset, say) must not act on the account any more.
      db.delete(oneTimeCodes).where(and(eq(oneTimeCodes.userId, caller.userId), ne(oneTimeCodes.purpose, "change_email"), switchedTo)),
      db.delete(resetRequests).where(and(eq(resetRequests.userId, caller.userId), switchedTo)),
      // The old address may undo the change for a week (email-revert.ts).
      db
        .insert(emailChangeReverts)
        .select(
          db
            .select({
              tokenHash: sql<string>`${revert.tokenHash}`.as("token_hash"),
              userId: sql<number>`${caller.userId}`.as("user_id"),
              oldEmail: sql<string>`${account.email}`.as("old_email"),
              expiresAt: sql<number>`${now + EMAIL_CHANGE_REVERT_TTL_MS}`.as("expires_at"),
            })
            .from(sql`(SELECT 1)`)
            .where(switchedTo),
        ),
      deleteCode(db, caller.userId, "change_email", code),
    ]);
    if (switched.length === 0) {
      // Taken by another account (not the caller's: a concurrent confirmation with this code may have won).
      const [taken] = await db
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.email, newEmail), ne(users.id, caller.userId)));
      return taken ? c.text(AuthMessage.userExists, 409) : c.text(AuthMessage.invalidConfirmationCode, 401);
    }
    log.info("email_changed", { userId: caller.userId, email: maskEmail(newEmail) });
    await sendEmailChangedNotice(mailerOf(c.var), account.email, newEmail, revert.token);
    return c.text(AuthMessage.emailChanged, 200);
  })

  .delete(
    "/account",
    describeRoute({
      ...bearer,
      summary: "Delete your account",
      description: "Needs the password. Deletes the account, its sessions, codes and notes at once; every token dies.",
      requestExample: { password: "correct horse battery" },
      responses: {
        "204": { description: "Deleted" },
        "400": text("Missing or malformed password", AuthMessage.passwordRequired, AuthMessage.passwordString, ...badJson),
        ...passwordChecked,
      },
    }),
    requireAccessToken,
    jsonBody(DeleteAccountBody), async (c) => {
    const { password, code: stepUpCode } = c.req.valid("json");
    const { db, log } = c.var;
    const caller = c.var.caller;

    const confirmed = await reauthenticate(c, { password, code: { value: stepUpCode } });
    if ("refused" in confirmed) return confirmed.refused;
    const now = Date.now();
    const live = liveSession(caller, now);
    // One transaction, each statement only while the caller's session is live: the notes (they point at
    // the user), the address's login attempts, then the user, whose sessions and codes go with it.
    const accountGone = sql`NOT EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${caller.userId})`;
    const [, , deleted] = await db.batch([
      db.delete(notes).where(and(eq(notes.userId, caller.userId), live)),
      db.delete(loginFailures).where(and(eq(loginFailures.email, confirmed.account.email), live)),
      db.delete(users).where(and(eq(users.id, caller.userId), live)).returning({ id: users.id }),
      // The notes' clock and tombstones (written as the notes went): a later account given the same id
      // must start a feed of its own.
      db.delete(noteTombstones).where(and(eq(noteTombstones.owner, caller.userId), accountGone)),
      db.delete(noteClocks).where(and(eq(noteClocks.owner, caller.userId), accountGone)),
    ]);
    if (deleted.length === 0) return unauthorized(c);
    log.info("account_deleted", { userId: caller.userId });
    return c.body(null, 204);
  });
