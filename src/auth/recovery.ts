import { and, eq } from "drizzle-orm";
import { Hono } from "hono";
import { loginFailures, oneTimeCodes, sessions, users } from "../db/schema";
import { tooManyRequests } from "../lib/http";
import { maskEmail } from "../lib/log";
import { hashPassword } from "../lib/password";
import { jsonBody } from "../lib/validation";
import type { AppEnv } from "../types";
import { claimCodeAttempt, codesMatch, codeStillIssued, codeToMail, deleteCode } from "./codes";
import { sendPasswordChangedNotice, sendPasswordResetCode } from "./mails";
import { AuthMessage } from "./messages";
import { ForgotPasswordBody, ResetPasswordBody } from "./schemas";

/** Account recovery: a reset code by e-mail, and a new password with it. */
export const recovery = new Hono<AppEnv>()
  .post("/forgot-password", jsonBody(ForgotPasswordBody), async (c) => {
    const { email } = c.req.valid("json");
    const { config, db, log } = c.var;

    // One round trip whatever the address (unknown, unverified, verified, or out of mail allowance), and
    // the mail goes out after the answer: neither the answer nor its timing tells whether it exists.
    const { issued, skipped, waitMs } = await codeToMail(db, eq(users.email, email), "reset_password", Date.now());
    if (issued) {
      log.info("password_reset_requested", { userId: issued.userId, email: maskEmail(email) });
      c.executionCtx.waitUntil(sendPasswordResetCode(config.smtp, email, issued.code, log));
    } else if (skipped) {
      // The answer must not tell (no 429 here), so the log does: a reset asked for within a minute of
      // the registration mail otherwise looks like a lost mail.
      log.info("password_reset_mail_skipped", { reason: skipped, email: maskEmail(email), retryAfterSeconds: Math.ceil(waitMs / 1000) });
    }
    return c.text(AuthMessage.resetRequested, 200);
  })

  .post("/reset-password", jsonBody(ResetPasswordBody), async (c) => {
    const { email, token, password } = c.req.valid("json");
    const { config, db, log } = c.var;

    const claim = await claimCodeAttempt(db, eq(users.email, email), "reset_password", Date.now());
    if (claim.outcome === "throttled") return tooManyRequests(c, claim.waitMs, AuthMessage.codeThrottled);
    if (claim.outcome === "invalid" || !codesMatch(token, claim.code)) return c.text(AuthMessage.invalidResetCode, 401);

    const { userId, code } = claim;
    const hash = await hashPassword(password, config.bcryptCost);
    // One transaction, and every statement only while the code is still the one claimed: the new
    // password; the address counts as verified (the code proves the mailbox, which is also how the
    // owner of an address someone else registered takes it back); every session and the login lock end.
    const stillIssued = codeStillIssued(userId, "reset_password", code);
    const [reset] = await db.batch([
      db.update(users).set({ password: hash, isVerified: true }).where(and(eq(users.id, userId), stillIssued)).returning({ id: users.id }),
      db.delete(sessions).where(and(eq(sessions.userId, userId), stillIssued)),
      db.delete(loginFailures).where(and(eq(loginFailures.email, email), stillIssued)),
      db.delete(oneTimeCodes).where(and(eq(oneTimeCodes.userId, userId), eq(oneTimeCodes.purpose, "verify_email"), stillIssued)),
      deleteCode(db, userId, "reset_password", code),
    ]);
    if (reset.length === 0) return c.text(AuthMessage.invalidResetCode, 401);

    log.info("password_reset", { userId, email: maskEmail(email) });
    await sendPasswordChangedNotice(config.smtp, email, log);
    return c.text(AuthMessage.passwordReset, 200);
  });
