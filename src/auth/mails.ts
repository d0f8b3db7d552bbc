import type { SmtpConfig } from "../config";
import { maskEmail, type Logger } from "../lib/log";
import { sendEmail } from "../lib/mail";

/**
 * Every mail of the accounts area, subject and text side by side: plain text, like the spec's
 * verification mail. None of them throws (see sendEmail); the last argument of sendEmail names the log
 * events (`<kind>_mail_sent`, `<kind>_mail_failed`).
 */

type Smtp = SmtpConfig | undefined;

/** The spec's mail: registration and resend. */
export function sendVerificationCode(smtp: Smtp, to: string, code: string, log: Logger): Promise<void> {
  return sendEmail(smtp, { to, subject: "Verify Your Email Address", text: `Your verification code is: ${code}` }, log, "verification");
}

export function sendPasswordResetCode(smtp: Smtp, to: string, code: string, log: Logger): Promise<void> {
  return sendEmail(smtp, { to, subject: "Reset Your Password", text: `Your password reset code is: ${code}` }, log, "password_reset");
}

export function sendPasswordChangedNotice(smtp: Smtp, to: string, log: Logger): Promise<void> {
  const text = "Your password was changed and your other sessions were signed out. If this was not you, reset your password now.";
  return sendEmail(smtp, { to, subject: "Your Password Was Changed", text }, log, "password_changed");
}

/** To the new address, which the code proves. */
export function sendEmailChangeCode(smtp: Smtp, to: string, code: string, log: Logger): Promise<void> {
  const text = `Your email change confirmation code is: ${code}`;
  return sendEmail(smtp, { to, subject: "Confirm Your New Email Address", text }, log, "email_change");
}

/** To the old address, once the change is done. */
export function sendEmailChangedNotice(smtp: Smtp, to: string, newEmail: string, log: Logger): Promise<void> {
  const text = `The email address of your account was changed to ${maskEmail(newEmail)}. If this was not you, reply to this message at once.`;
  return sendEmail(smtp, { to, subject: "Your Email Address Was Changed", text }, log, "email_changed");
}
