import { and, eq, gte, lt, ne, sql, type SQL } from "drizzle-orm";
import { Hono, type Context } from "hono";
import { loginFailures, notes, oneTimeCodes, resetRequests, sessions, users } from "../db/schema";
import { tooManyRequests } from "../lib/http";
import { maskEmail } from "../lib/log";
import { hashPassword, verifyPassword } from "../lib/password";
import type { AccessClaims } from "../lib/tokens";
import { jsonBody } from "../lib/validation";
import type { AppEnv, Database } from "../types";
import { claimCodeAttempt, codesMatch, codeStillIssued, codeToMail, deleteCode } from "./codes";
import { PASSWORD_CHECKS_PER_SESSION } from "./limits";
import { sendEmailChangeCode, sendEmailChangedNotice, sendPasswordChangedNotice } from "./mails";
import { AuthMessage } from "./messages";
import { ChangeEmailBody, ChangePasswordBody, ConfirmEmailChangeBody, DeleteAccountBody } from "./schemas";
import { callerSession, liveSession, requireAccessToken, unauthorized, type CallerEnv } from "./caller";

interface CallerAccount {
  id: number;
  email: string;
  password: string;
  isVerified: boolean;
  createdAt: number;
}

/** The account of the session `ofSession` selects (a condition on `sessions`), if that session is live. */
function callerAccountQuery(db: Database, ofSession: SQL) {
  return db
    .select({ id: users.id, email: users.email, password: users.password, isVerified: users.isVerified, createdAt: users.createdAt })
    .from(users)
    .innerJoin(sessions, eq(sessions.userId, users.id))
    .where(ofSession);
}

/** The caller's account, read in one query with the check that the caller's session is live. */
async function callerAccount(c: Context<CallerEnv>, caller: AccessClaims): Promise<CallerAccount | undefined> {
  const [account] = await callerAccountQuery(c.var.db, callerSession(caller, Date.now()));
  return account;
}

/**
 * Checks the caller's password before an account change, counted on the caller's session rather than on
 * the address (so neither a stolen access token nor the address's login lock can be used against the
 * owner): one conditional UPDATE claims a check before bcrypt, and refuses once PASSWORD_CHECKS_PER_SESSION
 * claims are wrong or in flight; the wrong one that reaches it ends the session, a right one gives its
 * claim back. Returns the account, or the answer to give (401 for no session, a session out of checks or
 * a wrong password).
 */
async function confirmPassword(c: Context<CallerEnv>, password: string) {
  const { config, db, log } = c.var;
  const caller = c.var.caller;
  const ofCaller = callerSession(caller, Date.now());
  const [[claim], [account]] = await db.batch([
    db
      .update(sessions)
      .set({ passwordFailures: sql`${sessions.passwordFailures} + 1` })
      .where(and(ofCaller, lt(sessions.passwordFailures, PASSWORD_CHECKS_PER_SESSION)))
      .returning({ passwordFailures: sessions.passwordFailures }),
    callerAccountQuery(db, ofCaller),
  ]);
  if (!claim || !account) return { refused: unauthorized(c) };
  const ofThisSession = and(eq(sessions.id, caller.sessionId), eq(sessions.userId, caller.userId));
  if (!(await verifyPassword(password, account.password, config.bcryptCost))) {
    if (claim.passwordFailures >= PASSWORD_CHECKS_PER_SESSION) {
      // Only while the count still stands there: a right check running alongside may have given its claim back.
      await db.delete(sessions).where(and(ofThisSession, gte(sessions.passwordFailures, PASSWORD_CHECKS_PER_SESSION)));
      log.warn("session_ended_wrong_passwords", { userId: caller.userId, sessionId: caller.sessionId });
    }
    return { refused: c.text(AuthMessage.wrongPassword, 401) };
  }
  await db
    .update(sessions)
    .set({ passwordFailures: sql`${sessions.passwordFailures} - 1` })
    .where(ofThisSession);
  return { account };
}

/** Every session of the user but the caller's. */
function otherSessions(caller: AccessClaims) {
  return and(eq(sessions.userId, caller.userId), ne(sessions.id, caller.sessionId));
}

/** The logged-in user's own account: read it, change its password or address, delete it. */
export const account = new Hono<AppEnv>()
  .get("/me", requireAccessToken, async (c) => {
    const user = await callerAccount(c, c.var.caller);
    if (!user) return unauthorized(c);
    return c.json({ id: user.id, email: user.email, verified: user.isVerified, created_at: new Date(user.createdAt).toISOString() }, 200);
  })

  .post("/change-password", requireAccessToken, jsonBody(ChangePasswordBody), async (c) => {
    const { current_password: currentPassword, new_password: newPassword } = c.req.valid("json");
    const { config, db, log } = c.var;
    const caller = c.var.caller;

    const confirmed = await confirmPassword(c, currentPassword);
    if ("refused" in confirmed) return confirmed.refused;
    const hash = await hashPassword(newPassword, config.bcryptCost);
    const now = Date.now();
    const [changed] = await db.batch([
      db.update(users).set({ password: hash }).where(and(eq(users.id, caller.userId), liveSession(caller, now))).returning({ id: users.id }),
      db.delete(sessions).where(and(otherSessions(caller), liveSession(caller, now))),
    ]);
    if (changed.length === 0) return unauthorized(c);
    log.info("password_changed", { userId: caller.userId });
    await sendPasswordChangedNotice(config.smtp, confirmed.account.email, log);
    return c.text(AuthMessage.passwordChanged, 200);
  })

  .post("/change-email", requireAccessToken, jsonBody(ChangeEmailBody), async (c) => {
    const { password, new_email: newEmail } = c.req.valid("json");
    const { config, db, log } = c.var;
    const caller = c.var.caller;

    const confirmed = await confirmPassword(c, password);
    if ("refused" in confirmed) return confirmed.refused;
    if (newEmail === confirmed.account.email) return c.text(AuthMessage.sameEmail, 400);
    // The same answer as register's 409 tells no more than register does. A registration of the
    // address between here and the confirmation is caught there.
    const [taken] = await db.select({ id: users.id }).from(users).where(eq(users.email, newEmail));
    if (taken) return c.text(AuthMessage.userExists, 409);

    // The code shares the account's mail allowance with every other mail of the account.
    const { issued, waitMs } = await codeToMail(db, eq(users.id, caller.userId), "change_email", Date.now(), newEmail);
    if (!issued) return tooManyRequests(c, waitMs, AuthMessage.emailChangeThrottled);
    log.info("email_change_requested", { userId: caller.userId, newEmail: maskEmail(newEmail) });
    await sendEmailChangeCode(config.smtp, newEmail, issued.code, log);
    return c.text(AuthMessage.emailChangeSent, 200);
  })

  .post("/confirm-email-change", requireAccessToken, jsonBody(ConfirmEmailChangeBody), async (c) => {
    const { token } = c.req.valid("json");
    const { config, db, log } = c.var;
    const caller = c.var.caller;

    const account = await callerAccount(c, caller);
    if (!account) return unauthorized(c);
    const now = Date.now();
    const claim = await claimCodeAttempt(db, eq(users.id, caller.userId), "change_email", now);
    if (claim.outcome === "throttled") return tooManyRequests(c, claim.waitMs, AuthMessage.codeThrottled);
    if (claim.outcome === "invalid" || !claim.newEmail || !codesMatch(token, claim.code)) {
      return c.text(AuthMessage.invalidConfirmationCode, 401);
    }

    const { code, newEmail } = claim;
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
    await sendEmailChangedNotice(config.smtp, account.email, newEmail, log);
    return c.text(AuthMessage.emailChanged, 200);
  })

  .delete("/account", requireAccessToken, jsonBody(DeleteAccountBody), async (c) => {
    const { password } = c.req.valid("json");
    const { db, log } = c.var;
    const caller = c.var.caller;

    const confirmed = await confirmPassword(c, password);
    if ("refused" in confirmed) return confirmed.refused;
    const now = Date.now();
    const live = liveSession(caller, now);
    // One transaction, each statement only while the caller's session is live: the notes (they point at
    // the user), the address's login attempts, then the user, whose sessions and codes go with it.
    const [, , deleted] = await db.batch([
      db.delete(notes).where(and(eq(notes.userId, caller.userId), live)),
      db.delete(loginFailures).where(and(eq(loginFailures.email, confirmed.account.email), live)),
      db.delete(users).where(and(eq(users.id, caller.userId), live)).returning({ id: users.id }),
    ]);
    if (deleted.length === 0) return unauthorized(c);
    log.info("account_deleted", { userId: caller.userId });
    return c.body(null, 204);
  });
