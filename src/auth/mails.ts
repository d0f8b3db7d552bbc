import type { Config } from "../config";
import { maskEmail, type Logger } from "../lib/log";
import { DAY } from "../lib/units";
import { sendEmail, type Mailer } from "../lib/mail";
import type { Database } from "../types";
import { EMAIL_CHANGE_REVERT_TTL_MS } from "./account/store";
import { claimMailBudget } from "./limits/mail-budget";
import { WRONG_CODES_PER_HOUR } from "./mfa/factor";

/**
 * Every mail of the accounts area, subject and text side by side: plain text, like the spec's
 * verification mail. None of them throws (see sendEmail); the last argument of sendEmail names the log
 * events (`<kind>_mail_sent`, `<kind>_mail_failed`).
 */

/** The request's mailer: the configured account, within the deployment's mail budget. */
export function mailerOf({ config, db, log }: { config: Config; db: Database; log: Logger }): Mailer {
  return { smtp: config.smtp, log, claim: (kind) => claimMailBudget(db, config, log, kind, Date.now()) };
}

/** The spec's mail: registration and resend. */
export function sendVerificationCode(mailer: Mailer, to: string, code: string): Promise<void> {
  return sendEmail(mailer, { to, subject: "Verify Your Email Address", text: `Your verification code is: ${code}` }, "verification");
}

/**
 * A reset code, with the request id it is bound to: whoever asked for it, the mailbox's owner has all a
 * reset needs (the one who asked has neither the code nor more than its 5 tries). With APP_URL, one link
 * carries both.
 */
export function sendPasswordResetCode(mailer: Mailer, to: string, code: string, requestId: string, appUrl: string | undefined): Promise<void> {
  const link = appUrl && `${appUrl}/reset-password?${new URLSearchParams({ email: to, request_id: requestId, code }).toString()}`;
  const text = [
    `Your password reset code is: ${code}`,
    `Its request id is: ${requestId}`,
    link ? `Set a new password here: ${link}` : "Send both with a new password to reset it (POST /auth/reset-password).",
    "If you did not ask for this, ignore this mail: your password stays as it is.",
  ].join("\n");
  return sendEmail(mailer, { to, subject: "Reset Your Password", text }, "password_reset");
}

export function sendPasswordChangedNotice(mailer: Mailer, to: string): Promise<void> {
  const text = "Your password was changed and your other sessions were signed out. If this was not you, reset your password now.";
  return sendEmail(mailer, { to, subject: "Your Password Was Changed", text }, "password_changed");
}

/** To the new address, which the code proves. */
export function sendEmailChangeCode(mailer: Mailer, to: string, code: string): Promise<void> {
  const text = `Your email change confirmation code is: ${code}`;
  return sendEmail(mailer, { to, subject: "Confirm Your New Email Address", text }, "email_change");
}

/**
 * To the old address, once the change is done: a link that undoes it (APP_URL's page, or the API's own:
 * account/email-revert.ts), and the token itself for apps.
 */
export function sendEmailChangedNotice(mailer: Mailer, to: string, newEmail: string, undo: { link: string; token: string }): Promise<void> {
  const text = [
    `The email address of your account was changed to ${maskEmail(newEmail)}.`,
    `If this was not you, undo the change within ${EMAIL_CHANGE_REVERT_TTL_MS / DAY} days: ${undo.link}`,
    "Undoing it also signs out every session and clears the password, which you then set again with forgot-password.",
    `Apps undo it with POST /auth/revert-email-change and this revert token: ${undo.token}`,
  ].join("\n");
  return sendEmail(mailer, { to, subject: "Your Email Address Was Changed", text }, "email_changed");
}

/** To the address an undone change had given the account: it is no longer the account's. */
export function sendEmailChangeRevertedNotice(mailer: Mailer, to: string, restoredEmail: string): Promise<void> {
  const text = [
    `The email address of your account was changed back to ${maskEmail(restoredEmail)} with the undo link mailed to that address, so this address no longer signs in.`,
    "Every session was signed out, the password cleared and any second factor added since the change removed.",
    "If this was not you, someone who holds that mailbox has taken the account: contact us at once.",
  ].join("\n");
  return sendEmail(mailer, { to, subject: "Your Email Address Was Changed Back", text }, "email_change_reverted");
}

/** Two-factor authentication was turned on, and the account's other sessions ended. */
export function sendMfaEnabledNotice(mailer: Mailer, to: string): Promise<void> {
  const text =
    "Two-factor authentication is now on for your account, and every other session was signed out: sign in again there with a code. " +
    "If this was not you, reset your password and contact us at once.";
  return sendEmail(mailer, { to, subject: "Two-Factor Authentication Turned On", text }, "mfa_enabled");
}

/** Two-factor authentication was turned off. */
export function sendMfaDisabledNotice(mailer: Mailer, to: string): Promise<void> {
  const text = "Two-factor authentication is now off for your account, and your other sessions were signed out. If this was not you, reset your password at once.";
  return sendEmail(mailer, { to, subject: "Two-Factor Authentication Turned Off", text }, "mfa_disabled");
}

/** The account's hourly allowance of wrong TOTP codes was used up: someone who knows the password is guessing. */
export function sendMfaGuessingNotice(mailer: Mailer, to: string): Promise<void> {
  const text = [
    `Someone who knows your password has entered ${WRONG_CODES_PER_HOUR} wrong two-factor authentication codes for your account within an hour.`,
    "Authentication codes are refused for the rest of that hour; your recovery codes still work.",
    "If this was not you, change your password now: whoever tried knows it.",
  ].join("\n");
  return sendEmail(mailer, { to, subject: "Someone Is Trying Codes on Your Account", text }, "mfa_guessing");
}

/** A recovery code was used, and how many are left. */
export function sendRecoveryCodeUsedNotice(mailer: Mailer, to: string, left: number): Promise<void> {
  const text = `A recovery code of your account was used. ${left} recovery codes are left. If this was not you, reset your password at once.`;
  return sendEmail(mailer, { to, subject: "Recovery Code Used", text }, "recovery_code_used");
}
