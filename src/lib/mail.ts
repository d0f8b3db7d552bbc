import { Email } from "worker-mailer";
import type { SmtpConfig } from "../config";
import { describeError, type Logger } from "./log";
import { sendMail } from "./smtp";

export const VERIFICATION_SUBJECT = "Verify Your Email Address";

export function verificationText(code: string): string {
  return `Your verification code is: ${code}`;
}

/**
 * Sends the verification code. Never throws: a missing mail account or a failed delivery is logged and
 * registration goes on, as the spec requires. The time spent is bounded by `smtp.timeoutMs`.
 */
export async function sendVerificationEmail(
  smtp: SmtpConfig | undefined,
  to: string,
  code: string,
  log: Logger,
): Promise<void> {
  if (!smtp) {
    log.warn("mail_not_configured", { detail: "MAIL_EMAIL or MAIL_APP_PASSWORD is not set; no verification e-mail sent" });
    return;
  }
  const message = new Email({
    from: { name: smtp.fromName, email: smtp.username },
    to,
    subject: VERIFICATION_SUBJECT,
    text: verificationText(code),
  });
  const started = Date.now();
  try {
    await sendMail(smtp, { from: smtp.username, to, data: message.getEmailData() });
    log.info("verification_mail_sent", { durationMs: Date.now() - started });
  } catch (err) {
    log.error("verification_mail_failed", { ...describeError(err), durationMs: Date.now() - started });
  }
}
