import { Email } from "worker-mailer";
import type { SmtpConfig } from "../config";
import { describeError, type Logger } from "./log";
import { sendMail, withAsciiDomain } from "./smtp";

/** One plain-text mail to one recipient. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** What sending a mail needs: the mail account, the request's logger, and the budget a mail must fit. */
export interface Mailer {
  smtp: SmtpConfig | undefined;
  log: Logger;
  /** Claims the right to send one more mail; false when a budget is used up (the claim logs why). */
  claim(kind: string): Promise<boolean>;
}

/**
 * Sends one mail from the configured account, once the mailer's budget allows it. Never throws: a missing
 * mail account, a used-up budget or a failed delivery is logged and the request goes on (the spec requires
 * it for the verification mail, and no mail is worth a failed request). `kind` (snake_case,
 * `verification`, `password_reset`, …) names the log events: `<kind>_mail_sent`, `<kind>_mail_failed`.
 * The time spent is bounded by `smtp.timeoutMs`.
 */
export async function sendEmail(mailer: Mailer, mail: Mail, kind: string): Promise<void> {
  const { smtp, log } = mailer;
  if (!smtp) {
    log.warn("mail_not_configured", { detail: `MAIL_EMAIL or MAIL_APP_PASSWORD is not set; no ${kind} e-mail sent` });
    return;
  }
  if (!(await mailer.claim(kind))) return;
  const started = Date.now();
  try {
    // worker-mailer writes addresses into the From and To headers as they are given: a header must name
    // the same ASCII domain the envelope uses.
    const from = withAsciiDomain(smtp.username);
    const to = withAsciiDomain(mail.to);
    const message = new Email({
      from: { name: smtp.fromName, email: from },
      to,
      subject: mail.subject,
      text: mail.text,
    });
    await sendMail(smtp, { from, to, data: message.getEmailData() });
    log.info(`${kind}_mail_sent`, { durationMs: Date.now() - started });
  } catch (err) {
    log.error(`${kind}_mail_failed`, { ...describeError(err), durationMs: Date.now() - started });
  }
}
