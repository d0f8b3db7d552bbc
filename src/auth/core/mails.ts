import { eq } from "drizzle-orm";
import type { Config } from "../../config";
import { maskEmail, type Logger } from "../../lib/log";
import { DAY } from "../../lib/units";
import { sendEmail, type Mail } from "../../lib/mail";
import type { AppEnv, Database } from "../../types";
import { claimMailBudget, type Audience } from "../limits/mail-budget";
import { users } from "../schema";
import { EMAIL_CHANGE_REVERT_TTL_MS, WRONG_CODES_PER_HOUR } from "../policy";

/**
 * Every mail of the accounts area, subject and text side by side: plain text, like the spec's
 * verification mail. None of them throws (see sendEmail); each names its kind, which names the log events
 * (`<kind>_mail_sent`, `<kind>_mail_failed`), and its audience, which decides the budget it draws on: mail
 * to an address nobody has proven may spend only part of it (limits/mail-budget.ts).
 */

/** The request's mailer: the configured account, within the deployment's mail budget, for the requesting `client`. */
export interface AccountsMailer {
  send(mail: Mail, kind: string, audience: Audience): Promise<void>;
}

/**
 * The mailer of a request: `client` is the requester's key (lib/client-key.ts), for the cap on mail to unverified
 * addresses.
 */
export function mailerOf(
  { config, db, log }: { config: Config; db: Database; log: Logger },
  client = "unknown",
): AccountsMailer {
  return {
    send: (mail, kind, audience) =>
      sendEmail(
        {
          smtp: config.smtp,
          log,
          claim: () => claimMailBudget(db, config, log, { kind, audience, client }, Date.now()),
        },
        mail,
        kind,
      ),
  };
}

/** The spec's mail: registration and resend. */
export function sendVerificationCode(mailer: AccountsMailer, to: string, code: string): Promise<void> {
  return mailer.send(
    { to, subject: "Verify Your Email Address", text: `Your verification code is: ${code}` },
    "verification",
    "unverified",
  );
}

/**
 * A reset code, with the request id it is bound to: whoever asked for it, the mailbox's owner has all a
 * reset needs (the one who asked has neither the code nor more than its 5 tries). With APP_URL, one link
 * carries both.
 */
export function sendPasswordResetCode(
  mailer: AccountsMailer,
  to: { email: string; verified: boolean },
  code: string,
  requestId: string,
  appUrl: string | undefined,
): Promise<void> {
  const link =
    appUrl &&
    `${appUrl}/reset-password?${new URLSearchParams({ email: to.email, request_id: requestId, code }).toString()}`;
  const text = [
    `Your password reset code is: ${code}`,
    `Its request id is: ${requestId}`,
    link
      ? `Set a new password here: ${link}`
      : "Send both with a new password to reset it (POST /auth/reset-password).",
    "If you did not ask for this, ignore this mail: your password stays as it is.",
  ].join("\n");
  return mailer.send(
    { to: to.email, subject: "Reset Your Password", text },
    "password_reset",
    to.verified ? "verified" : "unverified",
  );
}

/** After a reset or a change: passkeys are not touched by either, so the notice says they still sign in. */
export function sendPasswordChangedNotice(mailer: AccountsMailer, to: string): Promise<void> {
  const text =
    "Your password was changed and your other sessions were signed out. Your passkeys stay in place and still sign in: " +
    "remove any you do not recognise. If this was not you, reset your password now.";
  return mailer.send({ to, subject: "Your Password Was Changed", text }, "password_changed", "verified");
}

/** To the new address, which the code proves. */
export function sendEmailChangeCode(mailer: AccountsMailer, to: string, code: string): Promise<void> {
  const text = `Your email change confirmation code is: ${code}`;
  return mailer.send({ to, subject: "Confirm Your New Email Address", text }, "email_change", "unverified");
}

/**
 * To the old address, once the change is done: a link that undoes it (APP_URL's page, or the API's own:
 * account/email-revert.ts), and the token itself for apps.
 */
export function sendEmailChangedNotice(
  mailer: AccountsMailer,
  to: string,
  newEmail: string,
  undo: { link: string; token: string },
): Promise<void> {
  const text = [
    `The email address of your account was changed to ${maskEmail(newEmail)}.`,
    `If this was not you, undo the change within ${EMAIL_CHANGE_REVERT_TTL_MS / DAY} days: ${undo.link}`,
    "Undoing it also signs out every session and clears the password, which you then set again with forgot-password.",
    `Apps undo it with POST /auth/revert-email-change and this revert token: ${undo.token}`,
  ].join("\n");
  return mailer.send({ to, subject: "Your Email Address Was Changed", text }, "email_changed", "verified");
}

/** To the address an undone change had given the account: it is no longer the account's. */
export function sendEmailChangeRevertedNotice(
  mailer: AccountsMailer,
  to: string,
  restoredEmail: string,
): Promise<void> {
  const text = [
    `The email address of your account was changed back to ${maskEmail(restoredEmail)} with the undo link mailed to that address, so this address no longer signs in.`,
    "Every session was signed out, the password cleared and any second factor or passkey added since the change removed.",
    "If this was not you, someone who holds that mailbox has taken the account: contact us at once.",
  ].join("\n");
  return mailer.send({ to, subject: "Your Email Address Was Changed Back", text }, "email_change_reverted", "verified");
}

/** Two-factor authentication was turned on, and the account's other sessions ended. */
export function sendMfaEnabledNotice(mailer: AccountsMailer, to: string): Promise<void> {
  const text =
    "Two-factor authentication is now on for your account, and every other session was signed out: sign in again there with a code. " +
    "If this was not you, reset your password and contact us at once.";
  return mailer.send({ to, subject: "Two-Factor Authentication Turned On", text }, "mfa_enabled", "verified");
}

/** Two-factor authentication was turned off. */
export function sendMfaDisabledNotice(mailer: AccountsMailer, to: string): Promise<void> {
  const text =
    "Two-factor authentication is now off for your account, and your other sessions were signed out. If this was not you, reset your password at once.";
  return mailer.send({ to, subject: "Two-Factor Authentication Turned Off", text }, "mfa_disabled", "verified");
}

/** The account's hourly allowance of wrong TOTP codes was used up: someone who knows the password is guessing. */
export function sendMfaGuessingNotice(mailer: AccountsMailer, to: string): Promise<void> {
  const text = [
    `Someone who knows your password has entered ${WRONG_CODES_PER_HOUR} wrong two-factor authentication codes for your account within an hour.`,
    "Authentication codes are refused for the rest of that hour; your recovery codes still work.",
    "If this was not you, change your password now: whoever tried knows it.",
  ].join("\n");
  return mailer.send({ to, subject: "Someone Is Trying Codes on Your Account", text }, "mfa_guessing", "verified");
}

/** A recovery code was used, and how many are left. */
export function sendRecoveryCodeUsedNotice(mailer: AccountsMailer, to: string, left: number): Promise<void> {
  const text = `A recovery code of your account was used. ${left} recovery codes are left. If this was not you, reset your password at once.`;
  return mailer.send({ to, subject: "Recovery Code Used", text }, "recovery_code_used", "verified");
}

/** A passkey was added to the account: it signs in without the password. */
export function sendPasskeyAddedNotice(mailer: AccountsMailer, to: string, name: string): Promise<void> {
  const text = [
    `A passkey named "${name}" was added to your account. It signs in without your password.`,
    "If this was not you, remove it at once (your passkeys are listed in your account's security settings) and change your password.",
  ].join("\n");
  return mailer.send({ to, subject: "A Passkey Was Added to Your Account", text }, "passkey_added", "verified");
}

/** A passkey was removed from the account. */
export function sendPasskeyRemovedNotice(mailer: AccountsMailer, to: string, name: string): Promise<void> {
  const text = `The passkey named "${name}" was removed from your account and no longer signs in. If this was not you, change your password now: whoever did it knows it.`;
  return mailer.send({ to, subject: "A Passkey Was Removed from Your Account", text }, "passkey_removed", "verified");
}

/**
 * A note was shared with `to` (docs/sharing.md): from the owner's address, with nothing of the note itself (an
 * address typed wrong must not receive its title). Whether `to` has an account is not asked: the mail is the
 * same either way, and it counts as mail to an address nobody has proven, whose budget is half the deployment's.
 */
export function sendNoteSharedNotice(mailer: AccountsMailer, to: string, ownerEmail: string): Promise<void> {
  const text = [
    `${ownerEmail} shared a note with you.`,
    "Sign in with this address (or register it and confirm the code we mail you) to find it among the notes shared with you.",
    "If you do not know the sender, ignore this mail.",
  ].join("\n");
  return mailer.send({ to, subject: `${ownerEmail} shared a note with you`, text }, "note_shared", "unverified");
}

/**
 * Handed to the notes area at wiring (index.ts, `notesArea({ shareMail })`): the mail of a new share, on the
 * accounts area's mailer. It counts against the deployment's budgets and against the owner's own: the hourly
 * allowance of mail to unproven addresses one requester may cause (MAIL_UNVERIFIED_CLIENT_HOURLY_LIMIT), kept
 * per owner account rather than per network address, so that no owner sends more however many networks it uses.
 */
export async function mailNoteShared(
  request: Pick<AppEnv["Variables"], "db" | "config" | "log">,
  ownerId: number,
  to: string,
): Promise<void> {
  const [owner] = await request.db.select({ email: users.email }).from(users).where(eq(users.id, ownerId));
  if (!owner) return;
  await sendNoteSharedNotice(mailerOf(request, `account:${ownerId}`), to, owner.email);
}
