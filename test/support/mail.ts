import { env } from "cloudflare:workers";
import PostalMime from "postal-mime";
import type { ReceivedMail, SmtpPeer } from "../smtp/types";

export function smtpPort(peer: SmtpPeer): string {
  return String(env.SMTP.ports[peer]);
}

export async function mailsTo(address: string): Promise<ReceivedMail[]> {
  const response = await fetch(`${env.SMTP.inspectUrl}/messages?to=${encodeURIComponent(address)}`);
  return response.json();
}

export async function smtpConnections(): Promise<Partial<Record<SmtpPeer, number>>> {
  const response = await fetch(`${env.SMTP.inspectUrl}/connections`);
  return response.json();
}

/** Every command line `peer` (an smtp-server peer) has received, in order. */
export async function smtpCommands(peer: SmtpPeer): Promise<string[]> {
  const response = await fetch(`${env.SMTP.inspectUrl}/commands?peer=${peer}`);
  return response.json();
}

/** The code from the one verification e-mail sent to `address`. */
export async function mailedCode(address: string): Promise<string> {
  const codes = await codesMailed(address, CodePrefix.verification);
  if (codes.length !== 1) throw new Error(`expected one verification mail to ${address}, found ${codes.length}`);
  return codes[0]!;
}

export const Subject = {
  reset: "Reset Your Password",
  passwordChanged: "Your Password Was Changed",
  confirmNewEmail: "Confirm Your New Email Address",
  emailChanged: "Your Email Address Was Changed",
  emailConfirmed: "Your New Email Address Is Confirmed",
  changeUndone: "Your Email Address Change Was Undone",
  changedBack: "Your Email Address Was Changed Back",
} as const;

export interface ParsedMail {
  from: string | undefined;
  subject: string;
  text: string;
}

/** A received message as a test reads it: sender, subject and trimmed text. */
export async function parseMail(raw: string): Promise<ParsedMail> {
  const message = await PostalMime.parse(raw);
  const from = message.from ? `${message.from.name} <${message.from.address}>` : undefined;
  return { from, subject: message.subject ?? "", text: (message.text ?? "").trim() };
}

/** Every mail sent to `address` with `subject`, oldest first, parsed. */
export async function mailsWithSubject(address: string, subject: string): Promise<ParsedMail[]> {
  const parsed = await Promise.all((await mailsTo(address)).map((mail) => parseMail(mail.raw)));
  return parsed.filter((mail) => mail.subject === subject);
}

/** The text before the code in each kind of mail that carries one. */
export const CodePrefix = {
  verification: "Your verification code is: ",
  reset: "Your password reset code is: ",
  emailChange: "Your email change confirmation code is: ",
} as const;

/** The 6-digit code of a text whose first line is `<prefix><code>`, if it is one. */
function codeAfter(prefix: string, text: string): string | undefined {
  const line = text.split("\n")[0]!;
  return line.startsWith(prefix) && /^\d{6}$/.test(line.slice(prefix.length)) ? line.slice(prefix.length) : undefined;
}

/** The request id a reset mail carries beside its code. */
export function requestIdIn(mail: ParsedMail | undefined): string {
  const id = /^Its request id is: ([A-Za-z0-9_-]{22})$/m.exec(mail?.text ?? "")?.[1];
  if (!id) throw new Error(`no request id in mail: ${mail?.text}`);
  return id;
}

/** The codes of every mail to `address` whose text is `<prefix><code>`, oldest first. */
export async function codesMailed(address: string, prefix: string): Promise<string[]> {
  const texts = await Promise.all((await mailsTo(address)).map(async (mail) => (await parseMail(mail.raw)).text));
  return texts.map((text) => codeAfter(prefix, text)).filter((code) => code !== undefined);
}

/** Waits (up to 2 s) until `address` has `count` mails with `subject`: forgot-password mails after answering. */
export async function awaitMails(address: string, subject: string, count = 1): Promise<ParsedMail[]> {
  const deadline = Date.now() + 2_000;
  for (;;) {
    const mails = await mailsWithSubject(address, subject);
    if (mails.length >= count || Date.now() > deadline) return mails;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The 6-digit code of a mail whose text is `<prefix><code>`. */
export function codeIn(mail: ParsedMail | undefined, prefix: string): string {
  const code = codeAfter(prefix, mail?.text ?? "");
  if (!code) throw new Error(`no code in mail: ${mail?.text}`);
  return code;
}
