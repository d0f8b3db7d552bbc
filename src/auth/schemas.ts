import * as v from "valibot";
import { MAX_PASSWORD_BYTES, MIN_PASSWORD_CHARS, passwordBytes } from "../lib/password";
import { body, requiredString } from "../lib/validation";
import { AuthMessage } from "./messages";

/** The request body of each accounts endpoint: validation, OpenAPI and client types come from these. */

const MAX_EMAIL_LENGTH = 254;
// Something@domain.tld with no white space, control characters or the characters that would break
// out of an SMTP path (`<>`) or a header. Deliverability is proven by the code, not by a regex.
const PLAUSIBLE_EMAIL = /^[^\s\p{Cc}<>()[\]\\,;:"@]+@[^\s\p{Cc}<>()[\]\\,;:"@]+\.[^\s\p{Cc}<>()[\]\\,;:"@.]{2,}$/u;

/** E-mail addresses are compared trimmed and lowercased, everywhere. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

const credentialsEmail = v.pipe(
  requiredString(AuthMessage.emailAndPasswordRequired, AuthMessage.emailAndPasswordStrings),
  v.transform(normalizeEmail),
  v.description("E-mail address; compared trimmed and lowercased."),
);

// Passwords are taken as sent: only the empty string counts as missing.
const anyPassword = v.pipe(
  v.string((issue) => (issue.input == null || issue.input === "" ? AuthMessage.emailAndPasswordRequired : AuthMessage.emailAndPasswordStrings)),
  v.check((password) => password !== "", AuthMessage.emailAndPasswordRequired),
);

export const RegisterBody = body({
  email: v.pipe(
    credentialsEmail,
    v.check((email) => email.length <= MAX_EMAIL_LENGTH && PLAUSIBLE_EMAIL.test(email), AuthMessage.invalidEmail),
  ),
  password: v.pipe(
    anyPassword,
    v.check((password) => [...password].length >= MIN_PASSWORD_CHARS, AuthMessage.passwordTooShort),
    v.check((password) => passwordBytes(password) <= MAX_PASSWORD_BYTES, AuthMessage.passwordTooLong),
    v.description(`At least ${MIN_PASSWORD_CHARS} characters and at most ${MAX_PASSWORD_BYTES} bytes in UTF-8.`),
  ),
});

export const LoginBody = body({
  email: credentialsEmail,
  password: anyPassword,
});

export const VerifyEmailBody = body({
  email: v.pipe(
    requiredString(AuthMessage.emailAndTokenRequired, AuthMessage.emailAndTokenStrings),
    v.transform(normalizeEmail),
  ),
  token: v.pipe(
    requiredString(AuthMessage.emailAndTokenRequired, AuthMessage.emailAndTokenStrings),
    v.transform((token) => token.trim()),
    v.description("The 6-digit code from the verification e-mail."),
  ),
});

export const ResendVerificationBody = body({
  email: v.pipe(requiredString(AuthMessage.emailRequired, AuthMessage.emailString), v.transform(normalizeEmail)),
});
