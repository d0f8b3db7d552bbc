import { and, eq } from "drizzle-orm";
import { Hono } from "hono";
import { users } from "../db/schema";
import { tooManyRequests } from "../lib/http";
import { maskEmail } from "../lib/log";
import { sendVerificationCode } from "./mails";
import { hashPassword } from "../lib/password";
import { jsonBody } from "../lib/validation";
import type { AppEnv } from "../types";
import { claimCodeAttempt, codesMatch, codeStillIssued, codeToMail, deleteCode, issueCode } from "./codes";
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

    const [issued] = await issueCode(db, "verify_email", now, eq(users.id, created.id));
    log.info("user_registered", { userId: created.id, email: maskEmail(email) });
    if (issued) await sendVerificationCode(config.smtp, email, issued.code, log);
    return c.text(AuthMessage.userCreated, 201);
  })

  .post("/resend-verification", jsonBody(ResendVerificationBody), async (c) => {
    const { email } = c.req.valid("json");
    const { config, db, log } = c.var;
    const now = Date.now();

    // Unknown and verified accounts get the same answer as a successful resend, and no mail.
    const { issued, waitMs } = await codeToMail(db, and(eq(users.email, email), eq(users.isVerified, false))!, "verify_email", now);
    if (!issued) return waitMs > 0 ? tooManyRequests(c, waitMs, AuthMessage.mailThrottled) : c.text(AuthMessage.resendAccepted, 200);
    log.info("verification_code_resent", { userId: issued.userId, email: maskEmail(email) });
    await sendVerificationCode(config.smtp, email, issued.code, log);
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
