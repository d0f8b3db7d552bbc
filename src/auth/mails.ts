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

export function sendPasswordResetCode(mailer: Mailer, to: string, code: string): Promise<void> {
  return sendEmail(mailer, { to, subject: "Reset Your Password", text: `Your password reset code is: ${code}` }, "password_reset");
}

/** After a reset or a change: passkeys are not touched by either, so the notice says they still sign in. */
export function sendPasswordChangedNotice(mailer: Mailer, to: string): Promise<void> {
  const text =
    "Your password was changed and your other sessions were signed out. Your passkeys stay in place and still sign in: " +
    "remove any you do not recognise. If this was not you, reset your password now.";
  return sendEmail(mailer, { to, subject: "Your Password Was Changed", text }, "password_changed");
}

/** To the new address, which the code proves. */
export function sendEmailChangeCode(mailer: Mailer, to: string, code: string): Promise<void> {
  const text = `Your email change confirmation code is: ${code}`;
  return sendEmail(mailer, { to, subject: "Confirm Your New Email Address", text }, "email_change");
}

/** To the old address, once the change is done: with the token that undoes it (see email-revert.ts). */
export function sendEmailChangedNotice(mailer: Mailer, to: string, newEmail: string, revertToken: string): Promise<void> {
  const text = [
    `The email address of your account was changed to ${maskEmail(newEmail)}.`,
    `If this was not you, undo the change within ${EMAIL_CHANGE_REVERT_TTL_MS / DAY} days with this revert token: ${revertToken}`,
    "(POST /auth/revert-email-change); it also signs out every session and clears the password, which you then set again with forgot-password.",
  ].join("\n");
  return sendEmail(mailer, { to, subject: "Your Email Address Was Changed", text }, "email_changed");
}

/** To the address an undone change had given the account: it is no longer the account's. */
export function sendEmailChangeRevertedNotice(mailer: Mailer, to: string, restoredEmail: string): Promise<void> {
  const text = [
    `The email address of your account was changed back to ${maskEmail(restoredEmail)} with the undo link mailed to that address, so this address no longer signs in.`,
    "Every session was signed out, the password cleared and any second factor or passkey added since the change removed.",
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

/** A passkey was added to the account: it signs in without the password. */
export function sendPasskeyAddedNotice(mailer: Mailer, to: string, name: string): Promise<void> {
  const text = [
    `A passkey named "${name}" was added to your account. It signs in without your password.`,
    "If this was not you, remove it at once (your passkeys are listed in your account's security settings) and change your password.",
  ].join("\n");
  return sendEmail(mailer, { to, subject: "A Passkey Was Added to Your Account", text }, "passkey_added");
}

/** A passkey was removed from the account. */
export function sendPasskeyRemovedNotice(mailer: Mailer, to: string, name: string): Promise<void> {
  const text = `The passkey named "${name}" was removed from your account and no longer signs in. If this was not you, change your password now: whoever did it knows it.`;
  return sendEmail(mailer, { to, subject: "A Passkey Was Removed from Your Account", text }, "passkey_removed");
}
