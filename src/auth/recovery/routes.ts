import { Hono } from "hono";
import { badJson, describeRoute, json, text, throttled } from "../../lib/describe";
import { clientKey } from "../../lib/client-key";
import { randomId } from "../../lib/crypto";
import { maskEmail } from "../../lib/log";
import { hashPassword } from "../../lib/password";
import { MINUTE, duration } from "../../lib/units";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { codesMatch } from "../core/codes";
import { codeTryBudget } from "../limits/code-budget";
import { TURNSTILE_FIELD, turnstileRefusal } from "../limits/turnstile";
import { mailerOf, sendPasswordChangedNotice, sendPasswordResetCode } from "../core/mails";
import { AuthMessage } from "../messages";
import { accountErrors, accountsTag, passwordRules, turnstileAnswers } from "../openapi";
import { ForgotPasswordBody, ResetPasswordBody } from "../requests";
import { endSessions } from "../core/sessions";
import { claimResetTry, requestResetCode, resetPassword } from "./store";
import {
  CODE_DIGITS,
  CODE_TTL_MS,
  MAIL_COOLDOWN_MS,
  MAX_CODE_ATTEMPTS,
  RESET_MAILS_PER_CLIENT_PER_HOUR,
  RESET_MAILS_PER_HOUR,
} from "../policy";

/**
 * Account recovery: a reset code by e-mail, and a new password with it. Reset mails have an allowance
 * per address and, within it, per requesting client (see claimResetMail). A reset names the request and
 * its code (store.ts), so a right code with another request's id is wrong.
 */

export const recovery = new Hono<AppEnv>()
  .post(
    "/forgot-password",
    describeRoute({
      tags: accountsTag,
      summary: "Ask for a password reset code",
      description:
        `Always the same answer, in the same time, with a new \`request_id\`: a known address (verified or not) gets a ${CODE_DIGITS}-digit reset code ` +
        `valid for ${CODE_TTL_MS / MINUTE} minutes, bound to that request, mailed after the answer, within the address's reset-mail allowance: ` +
        `${RESET_MAILS_PER_HOUR} an hour, of which one client (an IPv4 address or an IPv6 /64) gets at most ${RESET_MAILS_PER_CLIENT_PER_HOUR}, ${duration(MAIL_COOLDOWN_MS)} apart.`,
      requestExample: { email: "ada@example.com" },
      responses: {
        "200": json("Accepted", {
          type: "object",
          required: ["message", "request_id"],
          properties: {
            message: { type: "string", enum: [AuthMessage.resetRequested] },
            request_id: {
              type: "string",
              description: "Opaque; send it to POST /auth/reset-password with the code this request mailed",
            },
          },
        }),
        "400": text(
          "Missing or malformed e-mail",
          AuthMessage.emailRequired,
          AuthMessage.emailString,
          AuthMessage.turnstileRequired,
          ...badJson,
        ),
        ...turnstileAnswers,
        ...accountErrors,
      },
    }),
    jsonBody(ForgotPasswordBody),
    async (c) => {
      const { email, [TURNSTILE_FIELD]: turnstileToken } = c.req.valid("json");
      const { db, log } = c.var;
      const refused = await turnstileRefusal(c, turnstileToken);
      if (refused) return refused;

      // A request id for every address (unknown, unverified, verified, or out of mail allowance), one round
      // trip whatever the address, and the mail goes out after the answer: neither the answer nor its
      // timing tells whether the address has an account.
      const requestId = randomId();
      const client = clientKey(c);
      const { issued, skipped } = await requestResetCode(db, email, client, requestId, Date.now());
      if (issued) {
        log.info("password_reset_requested", { userId: issued.userId, email: maskEmail(email) });
        c.executionCtx.waitUntil(
          sendPasswordResetCode(
            mailerOf(c.var, client),
            { email, verified: issued.verified },
            issued.code,
            requestId,
            c.var.config.appUrl,
          ),
        );
      } else if (skipped) {
        // The answer must not tell (no 429 here), so the log does: a reset mail the allowance held back
        // otherwise looks like a lost mail.
        log.info("password_reset_mail_skipped", {
          reason: skipped.reason,
          email: maskEmail(email),
          retryAfterSeconds: Math.ceil(skipped.waitMs / 1000),
        });
      }
      return c.json({ message: AuthMessage.resetRequested, request_id: requestId }, 200);
    },
  )

  .post(
    "/reset-password",
    describeRoute({
      tags: accountsTag,
      summary: "Set a new password with the reset code",
      description:
        "Sets the password (register's rules), marks the address verified, ends every session and the login lock, and mails a notice. " +
        `The code must come with the \`request_id\` of the request that mailed it; ${MAX_CODE_ATTEMPTS} wrong tries void that code, and tries with ` +
        "other request ids never touch it.",
      requestExample: {
        email: "ada@example.com",
        token: "123456",
        password: "a new long password",
        request_id: "q7Vb0c2JmXWb1b4u5mJx8A",
      },
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
          text(
            "The whole service's failed code tries are used up for the hour, or the per-client limit",
            AuthMessage.codeBudgetExhausted,
            AuthMessage.clientThrottled,
          ),
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
      const passwordHash = await hashPassword(password, config.bcryptCost);
      const reset = { userId, email, requestId, code, passwordHash };
      const done = await endSessions(
        c,
        (ending) => resetPassword(ending, c.var.audit, reset, Date.now()),
        (ok) => ok && userId,
      );
      if (!done) return c.text(AuthMessage.invalidResetCode, 401);

      log.info("password_reset", { userId, email: maskEmail(email) });
      await sendPasswordChangedNotice(mailerOf(c.var), email);
      return c.text(AuthMessage.passwordReset, 200);
    },
  );
