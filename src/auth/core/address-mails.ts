import { maskEmail } from "../../lib/log";
import { DAY, duration } from "../../lib/units";
import { linkedSignInsLine, type AccountsMailer } from "./mails";
import { EMAIL_CHANGE_REVERT_PROVEN_TTL_MS, EMAIL_CHANGE_REVERT_TTL_MS } from "../policy";

/**
 * The mails of an address's change and of its undo, which follow one rule (docs/threat-model/email-change.md): each
 * says what an undo removes, from when, and how its window shrinks, so the choice the service made between the two
 * stories (N8: the undo sides with the old address) is the reader's to see before it matters.
 */

/** To the new address, which the code proves. */
export function sendEmailChangeCode(mailer: AccountsMailer, to: string, code: string): Promise<void> {
  const text = `Your email change confirmation code is: ${code}`;
  return mailer.send({ to, subject: "Confirm Your New Email Address", text }, "email_change", "unverified");
}

/** The moment an undo removes from (EMAIL_CHANGE_LOOKBACK_MS before the change), as the mails write it. */
function when(since: number): string {
  return new Date(since).toUTCString();
}

/** What an undo removes, as the mails of a change say it. */
function undoRemoves(since: number): string {
  return `An undo signs out every session, clears the password, and removes every passkey, second factor and linked sign-in added since ${when(since)} or by the session that made the change.`;
}

/** How the undo's window shrinks once the account proves itself with an older second factor. */
function windowShrinks(since: number): string {
  return `Once the account signs in with a passkey or an authenticator app it had before ${when(since)}, the undo works for ${duration(EMAIL_CHANGE_REVERT_PROVEN_TTL_MS)} more at most.`;
}

/**
 * To the old address, once the change is done: a link that undoes it (APP_URL's page, or the API's own:
 * account/email-revert.ts), what an undo does, and the token itself for apps.
 */
export function sendEmailChangedNotice(
  mailer: AccountsMailer,
  to: string,
  change: { newEmail: string; since: number },
  undo: { link: string; token: string },
): Promise<void> {
  const text = [
    `The email address of your account was changed to ${maskEmail(change.newEmail)}.`,
    `If this was not you, undo the change within ${EMAIL_CHANGE_REVERT_TTL_MS / DAY} days: ${undo.link}`,
    `${undoRemoves(change.since)} You then set a new password with forgot-password.`,
    windowShrinks(change.since),
    `Apps undo it with POST /auth/revert-email-change and this revert token: ${undo.token}`,
  ].join("\n");
  return mailer.send({ to, subject: "Your Email Address Was Changed", text }, "email_changed", "verified");
}

/**
 * To the new address, once it is the account's: the old one may still undo the change, and the undo takes with it
 * what is added now (N8: the service cannot tell the owner's change from a phisher's, and sides with the old
 * address), unless an older second factor signs in.
 */
export function sendEmailChangeConfirmedNotice(
  mailer: AccountsMailer,
  to: string,
  change: { oldEmail: string; since: number },
): Promise<void> {
  const text = [
    `This is now the email address of your account. For ${EMAIL_CHANGE_REVERT_TTL_MS / DAY} days the old address (${maskEmail(change.oldEmail)}) can undo the change with the link mailed to it.`,
    undoRemoves(change.since),
    "That includes any you add now: a change made with a stolen password looks the same as yours, and the undo sides with the old address.",
    `If the change was yours, sign in once with a passkey or an authenticator app you had before ${when(change.since)}: the old address then has ${duration(EMAIL_CHANGE_REVERT_PROVEN_TTL_MS)} left at most.`,
  ].join("\n");
  return mailer.send(
    { to, subject: "Your New Email Address Is Confirmed", text },
    "email_change_confirmed",
    "verified",
  );
}

/** What an undo removed: the passkeys (by name), the second factors, the providers' identities. */
export interface Removed {
  passkeys: string[];
  factors: { kind: string; active: boolean }[];
  providers: string[];
}

/** What an undo did: the address it restored and the one it took, what it removed and from when; what still signs in. */
export interface Undone {
  restoredEmail: string;
  takenFrom: string;
  since: number;
  removed: Removed;
  providers: string[];
}

/** What an undo removed, in one line. */
function removedLine({ since, removed }: Undone): string {
  const parts = [
    ...removed.passkeys.map((name) => `the passkey "${name}"`),
    ...removed.factors.map((factor) =>
      factor.active
        ? "two-factor authentication with an authenticator app, and its recovery codes"
        : "an authenticator app not yet confirmed for two-factor authentication",
    ),
    ...removed.providers.map((provider) => `the sign-in with ${provider}`),
  ];
  return parts.length === 0
    ? `Nothing else was removed: no passkey, second factor or linked sign-in had been added since ${when(since)} or by the session that made the change.`
    : `Removed, as added since ${when(since)} or by the session that made the change: ${parts.join("; ")}.`;
}

/** To the address an undo gave the account back: what it removed, and what signs in still. */
export function sendEmailChangeUndoneNotice(mailer: AccountsMailer, undone: Undone): Promise<void> {
  const text = [
    `The change of your account's email address to ${maskEmail(undone.takenFrom)} was undone with the link mailed to this address: this is its address again.`,
    "Every session was signed out and the password cleared: set a new one with forgot-password.",
    removedLine(undone),
    linkedSignInsLine(undone.providers),
  ].join("\n");
  return mailer.send(
    { to: undone.restoredEmail, subject: "Your Email Address Change Was Undone", text },
    "email_change_undone",
    "verified",
  );
}

/** To the address an undone change had given the account: it is no longer the account's, and what went with it. */
export function sendEmailChangeRevertedNotice(mailer: AccountsMailer, undone: Undone): Promise<void> {
  const text = [
    `The email address of your account was changed back to ${maskEmail(undone.restoredEmail)} with the undo link mailed to that address, so this address no longer signs in.`,
    "Every session was signed out and the password cleared.",
    removedLine(undone),
    linkedSignInsLine(undone.providers),
    "If this was not you, someone who holds that mailbox has taken the account: contact us at once.",
  ].join("\n");
  return mailer.send(
    { to: undone.takenFrom, subject: "Your Email Address Was Changed Back", text },
    "email_change_reverted",
    "verified",
  );
}
