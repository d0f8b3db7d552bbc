import { and, eq, gt, lt, sql } from "drizzle-orm";
import { Hono } from "hono";
import { ConfigError } from "../config";
import { loginFailures, users } from "../db/schema";
import { CODE_TTL_MS, codeUsable, codesMatch, generateVerificationCode, MAX_CODE_ATTEMPTS } from "../lib/codes";
import { methodNotAllowed, tooManyRequests } from "../lib/http";
import { signLoginToken } from "../lib/jwt";
import { maskEmail } from "../lib/log";
import { sendVerificationEmail } from "../lib/mail";
import { hashPassword, verifyPassword } from "../lib/password";
import { jsonBody } from "../lib/validation";
import type { AppEnv } from "../types";
import {
  bumpWindowSql,
  LOGIN_FAILURES_BEFORE_LOCK,
  LOGIN_LOCK_MS,
  MAIL_COOLDOWN_MS,
  mailWait,
  nextWindow,
  VERIFY_FAILURES_PER_HOUR,
  windowWait,
} from "./limits";
import { AuthMessage } from "./messages";
import { LoginBody, RegisterBody, ResendVerificationBody, VerifyEmailBody } from "./schemas";

export const auth = new Hono<AppEnv>()
  .post("/register", jsonBody(RegisterBody), async (c) => {
    const { email, password } = c.req.valid("json");
    const { config, db, log } = c.var;

    const now = Date.now();
    const code = generateVerificationCode();
    // The unique index on e-mail decides between concurrent registrations, not a prior read.
    const [created] = await db
      .insert(users)
      .values({
        email,
        password: await hashPassword(password, config.bcryptCost),
        isVerified: false,
        verificationToken: code,
        tokenExpiry: now + CODE_TTL_MS,
        // The registration mail is the first of the hour's allowance.
        lastMailAt: now,
        mailWindowStart: now,
        mailsInWindow: 1,
      })
      .onConflictDoNothing({ target: users.email })
      .returning({ id: users.id });
    if (!created) return c.text(AuthMessage.userExists, 409);

    log.info("user_registered", { userId: created.id, email: maskEmail(email) });
    await sendVerificationEmail(config.smtp, email, code, log);
    return c.text(AuthMessage.userCreated, 201);
  })

  .post("/resend-verification", jsonBody(ResendVerificationBody), async (c) => {
    const { email } = c.req.valid("json");
    const { config, db, log } = c.var;
    const now = Date.now();

    const user = await db.select().from(users).where(eq(users.email, email)).get();
    // Unknown and verified accounts get the same answer as a successful resend, and no mail.
    if (!user || user.isVerified) return c.text(AuthMessage.resendAccepted, 200);

    const window = { start: user.mailWindowStart, count: user.mailsInWindow };
    const wait = mailWait(user.lastMailAt, window, now);
    if (wait > 0) return tooManyRequests(c, wait, AuthMessage.mailThrottled);

    // A code still in use is sent again (a new one would void the code in a slower earlier mail);
    // a voided or expired one is replaced, with a fresh attempt count. Either way, 15 more minutes.
    const keep = codeUsable(user, now);
    const code = keep ? user.verificationToken : generateVerificationCode();
    const next = nextWindow(window, now);
    const [claimed] = await db
      .update(users)
      .set({
        verificationToken: code,
        tokenExpiry: now + CODE_TTL_MS,
        failedCodeAttempts: keep ? user.failedCodeAttempts : 0,
        lastMailAt: now,
        mailWindowStart: next.start,
        mailsInWindow: next.count,
      })
      // Only if no other request sent a mail since we read the row: concurrent resends send one mail.
      .where(and(eq(users.id, user.id), eq(users.lastMailAt, user.lastMailAt), eq(users.isVerified, false)))
      .returning({ id: users.id });
    // Lost a race to another resend, which just sent a mail: a full cooldown applies.
    if (!claimed) return tooManyRequests(c, MAIL_COOLDOWN_MS, AuthMessage.mailThrottled);

    log.info("verification_code_resent", { userId: user.id, email: maskEmail(email), newCode: !keep });
    await sendVerificationEmail(config.smtp, email, code, log);
    return c.text(AuthMessage.resendAccepted, 200);
  })

  .post("/verify-email", jsonBody(VerifyEmailBody), async (c) => {
    const { email, token } = c.req.valid("json");
    const { db, log } = c.var;
    const now = Date.now();

    const user = await db.select().from(users).where(eq(users.email, email)).get();
    if (!user) return c.text(AuthMessage.invalidToken, 401);

    const blocked = windowWait({ start: user.verifyWindowStart, count: user.verifyFailures }, VERIFY_FAILURES_PER_HOUR, now);
    if (blocked > 0) {
      log.warn("verification_blocked", { userId: user.id, email: maskEmail(email) });
      return tooManyRequests(c, blocked, AuthMessage.verifyThrottled);
    }

    const usable = codeUsable(user, now);
    if (!usable || !codesMatch(token, user.verificationToken)) {
      // Every failure counts towards the hourly cap; a wrong guess at a live code also towards its five.
      const failures = bumpWindowSql(users.verifyWindowStart, users.verifyFailures, now);
      await db
        .update(users)
        .set({
          ...(usable && { failedCodeAttempts: sql`${users.failedCodeAttempts} + 1` }),
          verifyWindowStart: failures.start,
          verifyFailures: failures.count,
        })
        .where(eq(users.id, user.id));
      return c.text(AuthMessage.invalidToken, 401);
    }

    // The conditions are checked again in the write itself, so wrong guesses racing this request
    // cannot add up to more than MAX_CODE_ATTEMPTS tries at one code.
    const verified = await db
      .update(users)
      .set({ isVerified: true, verificationToken: null, tokenExpiry: null, failedCodeAttempts: 0 })
      .where(
        and(
          eq(users.id, user.id),
          eq(users.verificationToken, user.verificationToken),
          gt(users.tokenExpiry, now),
          lt(users.failedCodeAttempts, MAX_CODE_ATTEMPTS),
        ),
      )
      .returning({ id: users.id });
    if (verified.length === 0) return c.text(AuthMessage.invalidToken, 401);
    log.info("email_verified", { userId: user.id, email: maskEmail(email) });
    return c.text(AuthMessage.emailVerified, 200);
  })

  .post("/login", jsonBody(LoginBody), async (c) => {
    const { email, password } = c.req.valid("json");
    const { config, db, log } = c.var;
    const now = Date.now();

    // One round trip for both reads. Failures are kept per address, registered or not, so an
    // unknown address is answered (and locked) exactly like a real one.
    const [[user], [failure]] = await db.batch([
      db
        .select({ id: users.id, password: users.password, isVerified: users.isVerified })
        .from(users)
        .where(eq(users.email, email)),
      db.select().from(loginFailures).where(eq(loginFailures.email, email)),
    ]);
    if (failure && failure.lockedUntil > now) return tooManyRequests(c, failure.lockedUntil - now, AuthMessage.loginLocked);

    // The password is checked first: an unverified account with a wrong password is a 401, not a 403.
    if (!(await verifyPassword(password, user?.password, config.bcryptCost)) || !user) {
      const reachesLimit = sql`${loginFailures.failures} + 1 >= ${LOGIN_FAILURES_BEFORE_LOCK}`;
      await db
        .insert(loginFailures)
        .values({ email, failures: 1, lockedUntil: 0 })
        .onConflictDoUpdate({
          target: loginFailures.email,
          // The tenth failure locks the address and starts the count again for after the lock.
          set: {
            failures: sql`CASE WHEN ${reachesLimit} THEN 0 ELSE ${loginFailures.failures} + 1 END`,
            lockedUntil: sql`CASE WHEN ${reachesLimit} THEN ${now + LOGIN_LOCK_MS} ELSE ${loginFailures.lockedUntil} END`,
          },
        });
      if ((failure?.failures ?? 0) + 1 >= LOGIN_FAILURES_BEFORE_LOCK) {
        log.warn("login_locked", { email: maskEmail(email), lockedForMs: LOGIN_LOCK_MS });
      }
      return c.text(AuthMessage.invalidCredentials, 401);
    }
    // The right password ends a run of failures.
    if (failure) await db.delete(loginFailures).where(eq(loginFailures.email, email));

    if (!user.isVerified) return c.text(AuthMessage.notVerified, 403);
    if (!config.jwtSecret) throw new ConfigError("JWT_SECRET_KEY is not set; cannot sign login tokens");
    return c.json({ token: await signLoginToken(user.id, config.jwtSecret, log) }, 200);
  });

// Any other method on these paths is a 405. Registered outside the chain above, so that the exported app
// type (and with it the typed client) lists only the methods that exist.
for (const path of ["/register", "/resend-verification", "/verify-email", "/login"]) {
  auth.all(path, methodNotAllowed("POST"));
}
