import { eq } from "drizzle-orm";
import type { Context } from "hono";
import type { Config } from "../../config";
import { clientKey } from "../../lib/client-key";
import { maskEmail, type Logger } from "../../lib/log";
import { sendEmail, type Mail } from "../../lib/mail";
import type { AppEnv, Database } from "../../types";
import { claimMailBudget, type Audience } from "../limits/mail-budget";
import { users } from "../schema";
import { WRONG_CODES_PER_HOUR } from "../policy";

/**
 * Every mail of the accounts area, subject and text side by side (those of an address's change and its undo in
 * address-mails.ts): plain text, like the spec's verification mail. None of them throws (see sendEmail); each names
 * its kind, which names the log events (`<kind>_mail_sent`, `<kind>_mail_failed`), and its audience, which decides
 * the budget it draws on: mail to an address nobody has proven may spend only part of it (limits/mail-budget.ts).
 */

/** The request's mailer: the configured account, within the deployment's mail budget (limits/mail-budget.ts). */
export interface AccountsMailer {
  send(mail: Mail, kind: string, audience: Audience): Promise<void>;
}

/**
 * Who a mail is charged to: the account it concerns, and the client that asked for it (lib/client-key.ts): neither may
 * spend more than its share of the deployment's budget.
 */
export interface MailSource {
  account: number;
  client: string;
}

/**
 * The notices whose repeats within NOTICE_COALESCE_MS are coalesced into the first (one per kind and account): they
 * tell of an action, and the first tells it. Mails that carry a code or an undo token, and those already sent once per
 * window (mfa_guessing), are never held back for being repeats.
 */
const COALESCED = new Set([
  "password_changed",
  "mfa_enabled",
  "mfa_disabled",
  "recovery_code_used",
  "passkey_added",
  "passkey_removed",
  "passkey_counter_regressed",
  "identity_linked",
  "identity_unlinked",
]);

/** The mailer of mails charged to `source`. */
export function mailerOf(
  { config, db, log }: { config: Config; db: Database; log: Logger },
  source: MailSource,
): AccountsMailer {
  return {
    send: (mail, kind, audience) =>
      sendEmail(
        {
          smtp: config.smtp,
          log,
          claim: () =>
            claimMailBudget(db, config, log, { kind, audience, ...source, coalesce: COALESCED.has(kind) }, Date.now()),
        },
        mail,
        kind,
      ),
  };
}

/** The mailer of a request's mails about `account`, charged to it and to the requesting client. */
export function requestMailer<E extends AppEnv>(c: Context<E>, account: number): AccountsMailer {
  return mailerOf(c.var, { account, client: clientKey(c) });
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

/**
 * The line of a notice that names the account's linked sign-in providers: they sign in without the password, so a
 * notice about what signs in names them.
 */
export function linkedSignInsLine(providers: readonly string[]): string {
  return providers.length === 0
    ? "No sign-in provider is linked to your account."
    : `Sign-ins linked to your account, which sign in without the password: ${providers.join(", ")}. Unlink any you do not recognise (DELETE /auth/identities/{provider}).`;
}

/**
 * After a reset or a change: passkeys and linked sign-ins are not touched by either, so the notice says they still
 * sign in, and names the linked ones.
 */
export function sendPasswordChangedNotice(
  mailer: AccountsMailer,
  to: string,
  providers: readonly string[],
): Promise<void> {
  const text = [
    "Your password was changed and your other sessions were signed out. Your passkeys stay in place and still sign in: " +
      "remove any you do not recognise. If this was not you, reset your password now.",
    linkedSignInsLine(providers),
  ].join("\n");
  return mailer.send({ to, subject: "Your Password Was Changed", text }, "password_changed", "verified");
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

/** A sign-in provider's identity was linked to the account (a sign-in it vouched for the address in): it signs in. */
export function sendIdentityLinkedNotice(
  mailer: AccountsMailer,
  to: string,
  identity: { provider: string; email: string },
): Promise<void> {
  const text = [
    `A sign-in with ${identity.provider} (${maskEmail(identity.email)}) was linked to your account: it signs in without your password.`,
    `If this was not you, remove it at once: sign in, then unlink it (DELETE /auth/identities/${identity.provider}; your linked sign-ins are listed in your account's security settings), and change your password.`,
  ].join("\n");
  return mailer.send(
    { to, subject: "A Sign-In Provider Was Linked to Your Account", text },
    "identity_linked",
    "verified",
  );
}

/** A sign-in provider was unlinked from the account. */
export function sendIdentityUnlinkedNotice(mailer: AccountsMailer, to: string, provider: string): Promise<void> {
  const text = `The sign-in with ${provider} was unlinked from your account and no longer signs in. If this was not you, change your password now: whoever did it knows it.`;
  return mailer.send(
    { to, subject: "A Sign-In Provider Was Unlinked from Your Account", text },
    "identity_unlinked",
    "verified",
  );
}

/** A sign-in with a passkey carried a counter that did not move forward: the passkey may have been copied. */
export function sendPasskeyCounterNotice(mailer: AccountsMailer, to: string, name: string): Promise<void> {
  const text = [
    `Someone tried to sign in with your passkey named "${name}", and the passkey's signature counter went backwards, as a copy of it would make it.`,
    "That sign-in was refused, and the passkey is marked in your list of passkeys.",
    "If you did not just sign in with it, remove it (your passkeys are listed in your account's security settings) and change your password.",
  ].join("\n");
  return mailer.send(
    { to, subject: "A Passkey of Your Account May Have Been Copied", text },
    "passkey_counter_regressed",
    "verified",
  );
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
 * accounts area's mailer, charged as every mail is: to the owner's account and the requesting client's shares of the
 * deployment's budgets, and to the deployment's (docs/security.md).
 */
export async function mailNoteShared(
  request: Pick<AppEnv["Variables"], "db" | "config" | "log">,
  sender: MailSource,
  to: string,
): Promise<void> {
  const [owner] = await request.db.select({ email: users.email }).from(users).where(eq(users.id, sender.account));
  if (!owner) return;
  await sendNoteSharedNotice(mailerOf(request, sender), to, owner.email);
}
