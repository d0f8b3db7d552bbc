import { Hono, type Context } from "hono";
import { badJson, describeRoute, text, throttled } from "../../lib/describe";
import { clientKey } from "../../lib/client-key";
import { tooManyRequests } from "../../lib/http";
import { maskEmail } from "../../lib/log";
import { MINUTE } from "../../lib/units";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { requireAccessToken, unauthorized, type CallerEnv } from "../caller";
import { claimCodeAttempt, codesMatch, codeToMail } from "../core/codes";
import { codeTryBudget } from "../limits/code-budget";
import { claimSlot, releaseWindow } from "../limits/windows";
import { mailerOf, sendEmailChangeCode, sendEmailChangedNotice } from "../core/mails";
import { AuthMessage } from "../messages";
import { accountErrors, bearer, passwordChecked } from "../openapi";
import { ChangeEmailBody, ConfirmEmailChangeBody } from "../requests";
import { callerAccount } from "../core/accounts";
import { reauthenticate } from "../core/step-up";
import { newRevertToken, undoLink } from "./email-revert";
import { addressHeld } from "../core/accounts";
import { endSessions } from "../core/sessions";
import { switchEmail } from "./store";
import {
  CODE_DIGITS,
  CODE_TTL_MS,
  EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR,
  EMAIL_CHANGE_TRIES_PER_TARGET_PER_HOUR,
} from "../policy";

/**
 * Changing the address: a code to the new address (change-email), then the switch with it
 * (confirm-email-change); the old address gets a notice that can undo it (email-revert.ts).
 */

/** The window of e-mail change codes mailed to `address`, or of tries at proving it, across all accounts. */
function targetWindow(what: "codes" | "tries", address: string): string {
  return `email_change_${what}:${address}`;
}

/**
 * A code for `newEmail`: the target's own cap first (all accounts together), then the account's mail
 * allowance, which the code shares with every other mail of the account; a slot of the target's is given
 * back if refused.
 */
async function mailChangeCode(c: Context<CallerEnv>, newEmail: string) {
  const { db, log, caller } = c.var;
  const now = Date.now();
  const target = targetWindow("codes", newEmail);
  const slot = await claimSlot(db, target, EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR, now);
  if ("waitMs" in slot) {
    log.warn("email_change_target_throttled", { newEmail: maskEmail(newEmail) });
    return tooManyRequests(c, slot.waitMs, AuthMessage.emailChangeThrottled);
  }
  const { issued, waitMs } = await codeToMail(db, { id: caller.userId }, "change_email", now, newEmail);
  if (!issued) {
    await releaseWindow(db, target, slot.windowStart);
    return tooManyRequests(c, waitMs, AuthMessage.emailChangeThrottled);
  }
  log.info("email_change_requested", { userId: caller.userId, newEmail: maskEmail(newEmail) });
  await sendEmailChangeCode(mailerOf(c.var, clientKey(c)), newEmail, issued.code);
  return c.text(AuthMessage.emailChangeSent, 200);
}

/**
 * The proof of the new address: a try at the account's code claimed, then a slot of the target's own
 * window of tries (all accounts together), both before the code is compared; a right code gives the
 * slot back. Answers the claimed code and its address, or the refusal.
 */
async function proveNewAddress(c: Context<CallerEnv>, token: string) {
  const { db, log, caller } = c.var;
  const now = Date.now();
  const claim = await claimCodeAttempt(db, { id: caller.userId }, "change_email", now);
  if (claim.outcome === "throttled") return { refused: tooManyRequests(c, claim.waitMs, AuthMessage.codeThrottled) };
  if (claim.outcome === "invalid" || !claim.newEmail)
    return { refused: c.text(AuthMessage.invalidConfirmationCode, 401) };
  const target = targetWindow("tries", claim.newEmail);
  const slot = await claimSlot(db, target, EMAIL_CHANGE_TRIES_PER_TARGET_PER_HOUR, now);
  if ("waitMs" in slot) {
    log.warn("email_change_target_throttled", { newEmail: maskEmail(claim.newEmail) });
    return { refused: tooManyRequests(c, slot.waitMs, AuthMessage.codeThrottled) };
  }
  if (!codesMatch(token, claim.code)) return { refused: c.text(AuthMessage.invalidConfirmationCode, 401) };
  await releaseWindow(db, target, slot.windowStart);
  return { proven: { code: claim.code, newEmail: claim.newEmail } };
}

export const emailChange = new Hono<AppEnv>()
  .post(
    "/change-email",
    describeRoute({
      ...bearer,
      summary: "Ask to change your e-mail address",
      description: `Needs the password; mails a ${CODE_DIGITS}-digit code to the new address (valid ${CODE_TTL_MS / MINUTE} minutes), within the account's mail allowance.`,
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
    jsonBody(ChangeEmailBody),
    async (c) => {
      const { password, new_email: newEmail, code: stepUpCode } = c.req.valid("json");
      const confirmed = await reauthenticate(c, {
        password: { value: password, missing: AuthMessage.changeEmailRequired },
        code: { value: stepUpCode },
      });
      if ("refused" in confirmed) return confirmed.refused;
      if (newEmail === confirmed.account.email) return c.text(AuthMessage.sameEmail, 400);
      // The same answer as register's 409 tells no more than register does. A registration of the
      // address between here and the confirmation is caught there.
      if (await addressHeld(c.var.db, newEmail, Date.now())) return c.text(AuthMessage.userExists, 409);
      return mailChangeCode(c, newEmail);
    },
  )

  .post(
    "/confirm-email-change",
    describeRoute({
      ...bearer,
      summary: "Confirm the new e-mail address",
      description:
        "Switches the address to the one the code was mailed to, mails a notice to the old one, and ends every other session.",
      requestExample: { token: "123456" },
      responses: {
        "200": text("Changed", AuthMessage.emailChanged),
        "400": text("Missing or malformed token", AuthMessage.tokenRequired, AuthMessage.tokenString, ...badJson),
        "401": text(
          "Wrong, expired or voided code, or an invalid access token",
          AuthMessage.invalidConfirmationCode,
          AuthMessage.invalidAccessToken,
        ),
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
      const { db, log, caller } = c.var;
      const account = await callerAccount(c, caller);
      if (!account) return unauthorized(c);
      const proof = await proveNewAddress(c, token);
      if ("refused" in proof) return proof.refused;
      const { code, newEmail } = proof.proven;
      const revert = await newRevertToken();
      const change = { caller, oldEmail: account.email, newEmail, code, revertTokenHash: revert.tokenHash };
      const switched = await endSessions(
        c,
        (ending) => switchEmail(ending, c.var.audit, change, Date.now()),
        (ok) => ok && caller.userId,
      );
      if (!switched) {
        // Taken by another account (not the caller's: a concurrent confirmation with this code may have won).
        return (await addressHeld(db, newEmail, Date.now(), caller.userId))
          ? c.text(AuthMessage.userExists, 409)
          : c.text(AuthMessage.invalidConfirmationCode, 401);
      }
      log.info("email_changed", { userId: caller.userId, email: maskEmail(newEmail) });
      await sendEmailChangedNotice(mailerOf(c.var), account.email, newEmail, {
        link: undoLink(c.var.config.appUrl, c.req.url, revert.token),
        token: revert.token,
      });
      return c.text(AuthMessage.emailChanged, 200);
    },
  );
