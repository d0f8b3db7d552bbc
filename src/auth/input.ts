import { badRequest } from "../lib/http";
import { MAX_PASSWORD_BYTES, MIN_PASSWORD_CHARS, passwordBytes } from "../lib/password";
import { AuthMessage } from "./messages";

const MAX_EMAIL_LENGTH = 254;
// Something@domain.tld with no white space, control characters or the characters that would break
// out of an SMTP path (`<>`) or a header. Deliverability is proven by the code, not by a regex.
const PLAUSIBLE_EMAIL = /^[^\s\p{Cc}<>()[\]\\,;:"@]+@[^\s\p{Cc}<>()[\]\\,;:"@]+\.[^\s\p{Cc}<>()[\]\\,;:"@.]{2,}$/u;

/** E-mail addresses are compared trimmed and lowercased, everywhere. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

function isBlank(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === "string" && value.trim() === "");
}

/** `email` and `password` of a register or login body, both present and strings; `email` normalized. */
export function readCredentials(body: Record<string, unknown>): { email: string; password: string } {
  const { email, password } = body;
  if (isBlank(email) || password === undefined || password === null || password === "") {
    throw badRequest(AuthMessage.emailAndPasswordRequired);
  }
  if (typeof email !== "string" || typeof password !== "string") {
    throw badRequest(AuthMessage.emailAndPasswordStrings);
  }
  return { email: normalizeEmail(email), password };
}

/** `email` and `token` of a verify-email body: missing is the spec's 400, a wrong type ours. */
export function readVerification(body: Record<string, unknown>): { email: string; token: string } {
  const { email, token } = body;
  if (isBlank(email) || isBlank(token)) throw badRequest(AuthMessage.emailAndTokenRequired);
  if (typeof email !== "string" || typeof token !== "string") throw badRequest(AuthMessage.emailAndTokenStrings);
  return { email: normalizeEmail(email), token: token.trim() };
}

/** `email` of a resend body. */
export function readEmail(body: Record<string, unknown>): string {
  if (isBlank(body.email)) throw badRequest(AuthMessage.emailRequired);
  if (typeof body.email !== "string") throw badRequest(AuthMessage.emailString);
  return normalizeEmail(body.email);
}

/** The checks a new account must pass; login takes any credentials and answers 401 when they fail. */
export function checkNewAccount(email: string, password: string): void {
  if (email.length > MAX_EMAIL_LENGTH || !PLAUSIBLE_EMAIL.test(email)) throw badRequest(AuthMessage.invalidEmail);
  if ([...password].length < MIN_PASSWORD_CHARS) throw badRequest(AuthMessage.passwordTooShort);
  if (passwordBytes(password) > MAX_PASSWORD_BYTES) throw badRequest(AuthMessage.passwordTooLong);
}
