import { and, eq } from "drizzle-orm";
import { Hono } from "hono";
import { users } from "../db/schema";
import { tooManyRequests } from "../lib/http";
import { maskEmail } from "../lib/log";
import { sendVerificationEmail } from "../lib/mail";
import { hashPassword } from "../lib/password";
import { jsonBody } from "../lib/validation";
import type { AppEnv } from "../types";
import { claimCodeAttempt, codesMatch, codeStillIssued, deleteCode, issueCode } from "./codes";
import { claimMail, MAIL_COOLDOWN_MS, mailWait } from "./limits";
import { AuthMessage } from "./messages";
import { RegisterBody, ResendVerificationBody, VerifyEmailBody } from "./schemas";

/** Registration and e-mail verification: register, resend the code, verify it. */
export const registration = new Hono<AppEnv>()
  .post("/register", jsonBody(RegisterBody), async (c) => {
    const { email, password } = c.req.valid("json");
    const { config, db, log } = c.var;

    const now = Date.now();
    // The unique index on e-mail decides between concurrent registrations, not a prior read.
    const [created] = await db
      .insert(users)
      .values({
        email,
        password: await hashPassword(password, config.bcryptCost),
        isVerified: false,
        createdAt: now,
        // The registration mail is the first of the hour's allowance.
        lastMailAt: now,
        mailWindowStart: now,
        mailsInWindow: 1,
      })
      .onConflictDoNothing({ target: users.email })
      .returning({ id: users.id });
    if (!created) return c.text(AuthMessage.userExists, 409);

    const code = await issueCode(db, created.id, "verify_email", now);
    log.info("user_registered", { userId: created.id, email: maskEmail(email) });
    if (code) await sendVerificationEmail(config.smtp, email, code, log);
    return c.text(AuthMessage.userCreated, 201);
  })

  .post("/resend-verification", jsonBody(ResendVerificationBody), async (c) => {
    const { email } = c.req.valid("json");
    const { config, db, log } = c.var;
    const now = Date.now();

    const unverified = and(eq(users.email, email), eq(users.isVerified, false));
    // The mail allowance is claimed by one conditional write; the read batched after it only tells why not.
    const [[claimed], [user]] = await db.batch([
      claimMail(db, unverified, now),
      db
        .select({ isVerified: users.isVerified, lastMailAt: users.lastMailAt, start: users.mailWindowStart, count: users.mailsInWindow })
        .from(users)
        .where(eq(users.email, email)),
    ]);
    if (!claimed) {
      // Unknown and verified accounts get the same answer as a successful resend, and no mail.
      if (!user || user.isVerified) return c.text(AuthMessage.resendAccepted, 200);
      // A concurrent resend that claimed the mail just now leaves a full cooldown.
      const wait = mailWait(user.lastMailAt, user, now) || MAIL_COOLDOWN_MS;
      return tooManyRequests(c, wait, AuthMessage.mailThrottled);
    }

    // Only while the account is still unverified: a verification racing this one needs no new code.
    const code = await issueCode(db, claimed.id, "verify_email", now, eq(users.isVerified, false));
    if (!code) return c.text(AuthMessage.resendAccepted, 200);
    log.info("verification_code_resent", { userId: claimed.id, email: maskEmail(email) });
    await sendVerificationEmail(config.smtp, email, code, log);
    return c.text(AuthMessage.resendAccepted, 200);
  })

  .post("/verify-email", jsonBody(VerifyEmailBody), async (c) => {
    const { email, token } = c.req.valid("json");
    const { db, log } = c.var;

    const claim = await claimCodeAttempt(db, eq(users.email, email), "verify_email", Date.now());
    if (claim.outcome === "throttled") {
      log.warn("verification_blocked", { email: maskEmail(email) });
      return tooManyRequests(c, claim.waitMs, AuthMessage.verifyThrottled);
    }
    if (claim.outcome === "invalid" || !codesMatch(token, claim.code)) return c.text(AuthMessage.invalidToken, 401);

    const { userId, code } = claim;
    const [verified] = await db.batch([
      db
        .update(users)
        .set({ isVerified: true })
        .where(and(eq(users.id, userId), codeStillIssued(userId, "verify_email", code)))
        .returning({ id: users.id }),
      deleteCode(db, userId, "verify_email", code),
    ]);
    if (verified.length === 0) return c.text(AuthMessage.invalidToken, 401);
    log.info("email_verified", { userId, email: maskEmail(email) });
    return c.text(AuthMessage.emailVerified, 200);
  });
