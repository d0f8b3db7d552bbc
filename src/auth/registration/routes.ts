import { Hono } from "hono";
import { badJson, describeRoute, text, throttled } from "../../lib/describe";
import { clientKey } from "../../lib/client-key";
import { tooManyRequests } from "../../lib/http";
import { maskEmail } from "../../lib/log";
import { hashPassword } from "../../lib/password";
import { duration, MINUTE } from "../../lib/units";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { codeTryBudget } from "../limits/code-budget";
import { claimCodeAttempt, codesMatch, codeToMail } from "../core/codes";
import { TURNSTILE_FIELD, turnstileRefusal } from "../limits/turnstile";
import { mailerOf, sendVerificationCode } from "../core/mails";
import { AuthMessage } from "../messages";
import { accountErrors, accountsTag, passwordRules, turnstileAnswers } from "../openapi";
import { RegisterBody, ResendVerificationBody, VerifyEmailBody } from "../requests";
import { createAccount, markVerified } from "./store";
import {
  CODE_DIGITS,
  CODE_TRIES_PER_HOUR,
  CODE_TTL_MS,
  MAILS_PER_HOUR,
  MAIL_COOLDOWN_MS,
  MAX_CODE_ATTEMPTS,
} from "../policy";

/** Registration and e-mail verification: register, resend the code, verify it. */
export const registration = new Hono<AppEnv>()
  .post(
    "/register",
    describeRoute({
      tags: accountsTag,
      summary: "Register",
      description: `Creates an unverified account and e-mails a ${CODE_DIGITS}-digit code valid for ${CODE_TTL_MS / MINUTE} minutes.`,
      requestExample: { email: "ada@example.com", password: "correct horse battery" },
      responses: {
        "201": text("Created; the code is on its way", AuthMessage.userCreated),
        "400": text(
          "Malformed input",
          ...badJson,
          AuthMessage.emailAndPasswordRequired,
          AuthMessage.emailAndPasswordStrings,
          AuthMessage.invalidEmail,
          ...passwordRules,
          AuthMessage.turnstileRequired,
        ),
        "409": text("E-mail already registered", AuthMessage.userExists),
        ...turnstileAnswers,
        ...accountErrors,
      },
    }),
    jsonBody(RegisterBody),
    async (c) => {
      const { email, password, [TURNSTILE_FIELD]: turnstileToken } = c.req.valid("json");
      const { config, db, log } = c.var;
      const refused = await turnstileRefusal(c, turnstileToken);
      if (refused) return refused;

      const passwordHash = await hashPassword(password, config.bcryptCost);
      const created = await createAccount(db, c.var.audit, email, passwordHash, Date.now());
      if (!created) return c.text(AuthMessage.userExists, 409);
      log.info("user_registered", { userId: created.id, email: maskEmail(email) });
      if (created.code) await sendVerificationCode(mailerOf(c.var, clientKey(c)), email, created.code);
      return c.text(AuthMessage.userCreated, 201);
    },
  )

  .post(
    "/resend-verification",
    describeRoute({
      tags: accountsTag,
      summary: "Send the verification code again",
      description: `Same answer for every well-formed request; mails only an unverified account, at most once ${duration(MAIL_COOLDOWN_MS)} and ${MAILS_PER_HOUR} times an hour.`,
      requestExample: { email: "ada@example.com" },
      responses: {
        "200": text("Accepted", AuthMessage.resendAccepted),
        "400": text(
          "Missing or malformed e-mail",
          AuthMessage.emailRequired,
          AuthMessage.emailString,
          AuthMessage.turnstileRequired,
          ...badJson,
        ),
        ...turnstileAnswers,
        ...accountErrors,
        "429": throttled(
          text(
            "Mail cooldown or hourly cap, or the per-client limit",
            AuthMessage.mailThrottled,
            AuthMessage.clientThrottled,
          ),
        ),
      },
    }),
    jsonBody(ResendVerificationBody),
    async (c) => {
      const { email, [TURNSTILE_FIELD]: turnstileToken } = c.req.valid("json");
      const { db, log } = c.var;
      const refused = await turnstileRefusal(c, turnstileToken);
      if (refused) return refused;
      const now = Date.now();

      // Unknown and verified accounts get the same answer as a successful resend, and no mail.
      const { issued, waitMs } = await codeToMail(db, { email, unverified: true }, "verify_email", now);
      if (!issued)
        return waitMs > 0
          ? tooManyRequests(c, waitMs, AuthMessage.mailThrottled)
          : c.text(AuthMessage.resendAccepted, 200);
      log.info("verification_code_resent", { userId: issued.userId, email: maskEmail(email) });
      // After the answer, as forgot-password does: an answer that waited for SMTP would take longer for an
      // unverified account than for an unknown or verified one, and tell them apart. (Register keeps the
      // contract's order: the mail goes before its 201.)
      c.executionCtx.waitUntil(sendVerificationCode(mailerOf(c.var, clientKey(c)), email, issued.code));
      return c.text(AuthMessage.resendAccepted, 200);
    },
  )

  .post(
    "/verify-email",
    describeRoute({
      tags: accountsTag,
      summary: "Verify the e-mail address",
      description: `Confirms the code. ${MAX_CODE_ATTEMPTS} wrong codes void it; ${CODE_TRIES_PER_HOUR} failures in an hour block verification for the hour.`,
      requestExample: { email: "ada@example.com", token: "123456" },
      responses: {
        "200": text("Verified", AuthMessage.emailVerified),
        "400": text(
          "Missing or malformed fields",
          AuthMessage.emailAndTokenRequired,
          AuthMessage.emailAndTokenStrings,
          ...badJson,
        ),
        "401": text("Unknown e-mail, wrong, expired or voided code", AuthMessage.invalidToken),
        ...accountErrors,
        "429": throttled(
          text(
            "Too many failures (this account's, or the whole service's failed code tries), or the per-client limit",
            AuthMessage.verifyThrottled,
            AuthMessage.codeBudgetExhausted,
            AuthMessage.clientThrottled,
          ),
        ),
      },
    }),
    jsonBody(VerifyEmailBody),
    codeTryBudget,
    async (c) => {
      const { email, token } = c.req.valid("json");
      const { db, log } = c.var;

      const claim = await claimCodeAttempt(db, { email }, "verify_email", Date.now());
      if (claim.outcome === "throttled") {
        log.warn("verification_blocked", { email: maskEmail(email) });
        return tooManyRequests(c, claim.waitMs, AuthMessage.verifyThrottled);
      }
      if (claim.outcome === "invalid" || !codesMatch(token, claim.code)) return c.text(AuthMessage.invalidToken, 401);

      if (!(await markVerified(db, c.var.audit, claim.userId, claim.code)))
        return c.text(AuthMessage.invalidToken, 401);
      log.info("email_verified", { userId: claim.userId, email: maskEmail(email) });
      return c.text(AuthMessage.emailVerified, 200);
    },
  );
