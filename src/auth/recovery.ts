import { and, eq, gt, lt, sql } from "drizzle-orm";
import { Hono } from "hono";
import { loginFailures, oneTimeCodes, resetRequests, sessions, users } from "../db/schema";
import { badJson, describeRoute, json, text, throttled } from "../lib/describe";
import { clientKey } from "../lib/client-key";
import { maskEmail } from "../lib/log";
import { hashPassword } from "../lib/password";
import { randomId } from "../lib/crypto";
import { MINUTE } from "../lib/units";
import { jsonBody } from "../lib/validation";
import type { AppEnv, Database } from "../types";
import { codeTryBudget } from "./code-budget";
import { CODE_TTL_MS, codesMatch, generateCode, MAX_CODE_ATTEMPTS } from "./codes";
import { accountErrors, accountsTag, passwordRules } from "./docs";
import { claimResetMail, RESET_MAILS_PER_CLIENT_PER_HOUR, RESET_MAILS_PER_HOUR, resetMailAllowance, resetMailClaimed, resetMailWait } from "./limits";
import { mailerOf, sendPasswordChangedNotice, sendPasswordResetCode } from "./mails";
import { AuthMessage } from "./messages";
import { ForgotPasswordBody, ResetPasswordBody } from "./schemas";

/**
 * Account recovery: a reset code by e-mail, and a new password with it. Reset mails have an allowance
 * per address and, within it, per requesting client (see claimResetMail). Each forgot-password request has
 * its own id and, when it mails one, its own code (a row of `reset_requests`); a reset names both. So the
 * owner's code has its own MAX_CODE_ATTEMPTS tries, which nobody guessing with another request's id
 * (their own, or one that mailed nothing) can touch, and a right code with another request's id is wrong.
 */

/**
 * The request's code, stored under its id for CODE_TTL_MS, for the account of `email` once a reset mail
 * is claimed for the request (see claimResetMail): all in one transaction, so a request that may not mail
 * stores nothing. Returns the account and the code to mail, or, for an account whose allowance held the
 * mail back, why and for how long (the allowance as the batch left it).
 */
async function requestResetCode(db: Database, email: string, client: string, requestId: string, now: number) {
  const [, , [issued], [account], allowances] = await db.batch([
    ...claimResetMail(db, email, client, requestId, now),
    db
      .insert(resetRequests)
      .select(
        // Every column, in the table's order (drizzle's rule for INSERT … SELECT).
        db
          .select({
            id: sql<string>`${requestId}`.as("id"),
            userId: users.id,
            code: sql<string>`${generateCode()}`.as("code"),
            expiresAt: sql<number>`${now + CODE_TTL_MS}`.as("expires_at"),
            attempts: sql<number>`0`.as("attempts"),
          })
          .from(users)
          .where(and(eq(users.email, email), resetMailClaimed(email, requestId))),
      )
      .returning({ userId: resetRequests.userId, code: resetRequests.code }),
    db.select({ id: users.id }).from(users).where(eq(users.email, email)),
    resetMailAllowance(db, email, client),
  ]);
  if (issued) return { issued };
  return { skipped: account ? resetMailWait(allowances, client, now) : undefined };
}

/**
 * Claims one try at the code of request `requestId` of the account of `email`, before the code is
 * compared: one conditional UPDATE that refuses when there is no such request of that account, or its
 * code is expired or void. However many guesses run at once, a code is compared at most
 * MAX_CODE_ATTEMPTS times; tries with other request ids never touch it.
 */
async function claimResetTry(db: Database, email: string, requestId: string, now: number) {
  const [claim] = await db
    .update(resetRequests)
    .set({ attempts: sql`${resetRequests.attempts} + 1` })
    .where(
      and(
        eq(resetRequests.id, requestId),
        sql`${resetRequests.userId} = (SELECT ${users.id} FROM ${users} WHERE ${users.email} = ${email})`,
        lt(resetRequests.attempts, MAX_CODE_ATTEMPTS),
        gt(resetRequests.expiresAt, now),
      ),
    )
    .returning({ userId: resetRequests.userId, code: resetRequests.code });
  return claim;
}

export const recovery = new Hono<AppEnv>()
  .post(
    "/forgot-password",
    describeRoute({
      tags: accountsTag,
      summary: "Ask for a password reset code",
      description:
        "Always the same answer, in the same time, with a new `request_id`: a known address (verified or not) gets a 6-digit reset code " +
        `valid for ${CODE_TTL_MS / MINUTE} minutes, bound to that request, mailed after the answer, within the address's reset-mail allowance: ` +
        `${RESET_MAILS_PER_HOUR} an hour, of which one client (an IPv4 address or an IPv6 /64) gets at most ${RESET_MAILS_PER_CLIENT_PER_HOUR}, a minute apart.`,
      requestExample: { email: "ada@example.com" },
      responses: {
        "200": json("Accepted", {
          type: "object",
          required: ["message", "request_id"],
          properties: {
            message: { type: "string", enum: [AuthMessage.resetRequested] },
            request_id: { type: "string", description: "Opaque; send it to POST /auth/reset-password with the code this request mailed" },
          },
        }),
        "400": text("Missing or malformed e-mail", AuthMessage.emailRequired, AuthMessage.emailString, ...badJson),
        ...accountErrors,
      },
    }),
    jsonBody(ForgotPasswordBody), async (c) => {
    const { email } = c.req.valid("json");
    const { db, log } = c.var;

    // A request id for every address (unknown, unverified, verified, or out of mail allowance), one round
    // trip whatever the address, and the mail goes out after the answer: neither the answer nor its
    // timing tells whether the address has an account.
    const requestId = randomId();
    const { issued, skipped } = await requestResetCode(db, email, clientKey(c), requestId, Date.now());
    if (issued) {
      log.info("password_reset_requested", { userId: issued.userId, email: maskEmail(email) });
      c.executionCtx.waitUntil(sendPasswordResetCode(mailerOf(c.var), email, issued.code));
    } else if (skipped) {
      // The answer must not tell (no 429 here), so the log does: a reset mail the allowance held back
      // otherwise looks like a lost mail.
      log.info("password_reset_mail_skipped", { reason: skipped.reason, email: maskEmail(email), retryAfterSeconds: Math.ceil(skipped.waitMs / 1000) });
    }
    return c.json({ message: AuthMessage.resetRequested, request_id: requestId }, 200);
  })

  .post(
    "/reset-password",
    describeRoute({
      tags: accountsTag,
      summary: "Set a new password with the reset code",
      description:
        "Sets the password (register's rules), marks the address verified, ends every session and the login lock, and mails a notice. " +
        `The code must come with the \`request_id\` of the request that mailed it; ${MAX_CODE_ATTEMPTS} wrong tries void that code, and tries with ` +
        "other request ids never touch it.",
      requestExample: { email: "ada@example.com", token: "123456", password: "a new long password", request_id: "q7Vb0c2JmXWb1b4u5mJx8A" },
      responses: {
        "200": text("Password set", AuthMessage.passwordReset),
        "400": text(
          "Missing or malformed fields",
          AuthMessage.resetFieldsRequired,
          AuthMessage.resetFieldsStrings,
          AuthMessage.requestIdRequired,
          AuthMessage.requestIdString,
          ...passwordRules,
          ...badJson,
        ),
        "401": text("Unknown e-mail or request id, wrong, expired or voided code", AuthMessage.invalidResetCode),
        ...accountErrors,
        "429": throttled(
          text("The whole service's failed code tries are used up for the hour, or the per-client limit", AuthMessage.codeBudgetExhausted, AuthMessage.clientThrottled),
        ),
      },
    }),
    jsonBody(ResetPasswordBody),
    codeTryBudget,
    async (c) => {
    const { email, request_id: requestId, token, password } = c.req.valid("json");
    const { config, db, log } = c.var;

    const claim = await claimResetTry(db, email, requestId, Date.now());
    if (!claim || !codesMatch(token, claim.code)) return c.text(AuthMessage.invalidResetCode, 401);

    const { userId, code } = claim;
    const hash = await hashPassword(password, config.bcryptCost);
    // One transaction, and every statement only while the request is still there with the code claimed:
    // the new password; the address counts as verified (the code proves the mailbox, which is also how
    // the owner of an address someone else registered takes it back); every session and the login lock
    // end; and last, every reset request of the account is used up.
    const stillIssued = sql`EXISTS (SELECT 1 FROM ${resetRequests} WHERE ${and(eq(resetRequests.id, requestId), eq(resetRequests.code, code))})`;
    const [reset] = await db.batch([
      db.update(users).set({ password: hash, isVerified: true }).where(and(eq(users.id, userId), stillIssued)).returning({ id: users.id }),
      db.delete(sessions).where(and(eq(sessions.userId, userId), stillIssued)),
      db.delete(loginFailures).where(and(eq(loginFailures.email, email), stillIssued)),
      db.delete(oneTimeCodes).where(and(eq(oneTimeCodes.userId, userId), eq(oneTimeCodes.purpose, "verify_email"), stillIssued)),
      db.delete(resetRequests).where(and(eq(resetRequests.userId, userId), stillIssued)),
    ]);
    if (reset.length === 0) return c.text(AuthMessage.invalidResetCode, 401);

    log.info("password_reset", { userId, email: maskEmail(email) });
    await sendPasswordChangedNotice(mailerOf(c.var), email);
    return c.text(AuthMessage.passwordReset, 200);
  });
