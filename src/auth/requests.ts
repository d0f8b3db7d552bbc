import * as v from "valibot";
import { MAX_PASSWORD_BYTES, MIN_PASSWORD_CHARS, normalizePassword, passwordBytes } from "../lib/password";
import { body, requiredString } from "../lib/validation";
import { TURNSTILE_FIELD } from "./limits/turnstile";
import { AuthMessage } from "./messages";
import { CODE_DIGITS, MAX_EMAIL_LENGTH, RECENT_SIGN_IN_MS } from "./policy";
import { duration } from "../lib/units";
import { TOTP_DIGITS } from "../lib/totp";

/** The request body of each accounts endpoint: validation, OpenAPI and client types come from these. */

// Something@domain.tld with no white space, control characters or the characters that would break
// out of an SMTP path (`<>`) or a header. Deliverability is proven by the code, not by a regex.
const PLAUSIBLE_EMAIL = /^[^\s\p{Cc}<>()[\]\\,;:"@]+@[^\s\p{Cc}<>()[\]\\,;:"@]+\.[^\s\p{Cc}<>()[\]\\,;:"@.]{2,}$/u;
// Code points nobody can see or type on purpose: controls, format characters (zero-width joiners, bidi
// overrides), private-use, unassigned and other default-ignorable ones. Two addresses that look the same
// must be the same address, so these are refused rather than kept or silently dropped.
const INVISIBLE = /[\p{C}\p{Default_Ignorable_Code_Point}]/u;

/**
 * E-mail addresses are compared trimmed, in Unicode NFC and lowercased, everywhere. NFC is the form
 * internationalized mail uses (RFC 6532), so `café` typed with a combining accent or a precomposed `é` is
 * one address; compatibility folding (NFKC) is not applied, as it could change which mailbox is meant.
 */
export function normalizeEmail(email: string): string {
  return email.trim().normalize("NFC").toLowerCase();
}

/** A plausible address: the rules register and login apply before anything is stored for an address. */
export function plausibleEmail(email: string): boolean {
  return email.length <= MAX_EMAIL_LENGTH && !INVISIBLE.test(email) && PLAUSIBLE_EMAIL.test(email);
}

/** An address that an account is created or found by: normalized, and plausible (else a 400). */
function accountEmail(required: string, notString: string) {
  return v.pipe(
    requiredString(required, notString),
    v.transform(normalizeEmail),
    v.check(plausibleEmail, AuthMessage.invalidEmail),
    v.description("E-mail address; compared trimmed, in Unicode NFC and lowercased."),
  );
}

/** An address only looked up: normalized; an implausible one simply matches no account. */
function lookupEmail(required: string, notString: string) {
  return v.pipe(requiredString(required, notString), v.transform(normalizeEmail));
}

// Passwords are taken as sent (lib/password.ts hashes them in Unicode NFKC): only the empty string
// counts as missing.
function anyPassword(required: string, notString: string) {
  return v.pipe(
    v.string((issue) => (issue.input == null || issue.input === "" ? required : notString)),
    v.check((password) => password !== "", required),
  );
}

/** A password being set: register's rules. */
function newPassword(required: string, notString: string) {
  return v.pipe(
    anyPassword(required, notString),
    v.check((password) => [...normalizePassword(password)].length >= MIN_PASSWORD_CHARS, AuthMessage.passwordTooShort),
    v.check(
      (password) => passwordBytes(normalizePassword(password)) <= MAX_PASSWORD_BYTES,
      AuthMessage.passwordTooLong,
    ),
    v.description(
      `At least ${MIN_PASSWORD_CHARS} characters and at most ${MAX_PASSWORD_BYTES} bytes in UTF-8, counted after Unicode NFKC normalization.`,
    ),
  );
}

/** A one-time code from a mail: trimmed. */
function code(required: string, notString: string) {
  return v.pipe(
    requiredString(required, notString),
    v.transform((token) => token.trim()),
    v.description(`The ${CODE_DIGITS}-digit code from the e-mail.`),
  );
}

/** The Cloudflare Turnstile token, where TURNSTILE_SECRET_KEY asks for one (limits/turnstile.ts). */
const turnstileToken = v.optional(
  v.pipe(
    v.string(AuthMessage.turnstileRequired),
    v.description(
      "Cloudflare Turnstile's token, when the service asks for one (TURNSTILE_SECRET_KEY); may also come as a header.",
    ),
  ),
);

export const RegisterBody = body({
  email: accountEmail(AuthMessage.emailAndPasswordRequired, AuthMessage.emailAndPasswordStrings),
  password: newPassword(AuthMessage.emailAndPasswordRequired, AuthMessage.emailAndPasswordStrings),
  [TURNSTILE_FIELD]: turnstileToken,
});

export const LoginBody = body({
  email: accountEmail(AuthMessage.emailAndPasswordRequired, AuthMessage.emailAndPasswordStrings),
  password: anyPassword(AuthMessage.emailAndPasswordRequired, AuthMessage.emailAndPasswordStrings),
  // Never a 400: a value that is not one of our tokens (not even a string) counts for nothing, so the
  // answer tells nothing about it.
  device_token: v.fallback(
    v.optional(
      v.pipe(
        v.string(),
        v.description(
          "The `device_token` of an earlier successful login from this device: judged on this device's own failed logins only.",
        ),
      ),
    ),
    undefined,
  ),
});

export const VerifyEmailBody = body({
  email: lookupEmail(AuthMessage.emailAndTokenRequired, AuthMessage.emailAndTokenStrings),
  token: code(AuthMessage.emailAndTokenRequired, AuthMessage.emailAndTokenStrings),
});

export const ResendVerificationBody = body({
  email: lookupEmail(AuthMessage.emailRequired, AuthMessage.emailString),
  [TURNSTILE_FIELD]: turnstileToken,
});

export const ForgotPasswordBody = body({
  email: lookupEmail(AuthMessage.emailRequired, AuthMessage.emailString),
  [TURNSTILE_FIELD]: turnstileToken,
});

export const ResetPasswordBody = body({
  email: lookupEmail(AuthMessage.resetFieldsRequired, AuthMessage.resetFieldsStrings),
  token: code(AuthMessage.resetFieldsRequired, AuthMessage.resetFieldsStrings),
  password: newPassword(AuthMessage.resetFieldsRequired, AuthMessage.resetFieldsStrings),
  // Any string: one that names no request of the address is simply a wrong code (401).
  request_id: v.pipe(
    requiredString(AuthMessage.requestIdRequired, AuthMessage.requestIdString),
    v.description("The `request_id` of the forgot-password answer whose mail carried the code."),
  ),
});

/** The second factor a sensitive change asks for while two-factor authentication is on (step-up). */
export const stepUpCode = v.optional(
  v.pipe(
    v.string(AuthMessage.codeString),
    v.description(
      "While two-factor authentication is on: a current code of the authenticator app, or a recovery code.",
    ),
  ),
);

/** A code of the authenticator app, or a recovery code. */
const factorCode = v.pipe(
  requiredString(AuthMessage.codeRequired, AuthMessage.codeString),
  v.description(`A current ${TOTP_DIGITS}-digit code of the authenticator app.`),
);

/**
 * The password a step-up asks for: required of an account that has one (a 400 from the step-up), left out
 * by an account without one (auth/core/step-up.ts).
 */
function stepUpPassword(required: string, notString: string) {
  return v.optional(
    v.pipe(
      anyPassword(required, notString),
      v.description(
        `The account's password; an account without one (\`has_password\` false) leaves it out and needs a session opened in the last ${duration(RECENT_SIGN_IN_MS)}.`,
      ),
    ),
  );
}

export const ChangePasswordBody = body({
  current_password: stepUpPassword(AuthMessage.changePasswordRequired, AuthMessage.changePasswordStrings),
  new_password: newPassword(AuthMessage.changePasswordRequired, AuthMessage.changePasswordStrings),
  code: stepUpCode,
});

export const ChangeEmailBody = body({
  password: stepUpPassword(AuthMessage.changeEmailRequired, AuthMessage.changeEmailStrings),
  new_email: accountEmail(AuthMessage.changeEmailRequired, AuthMessage.changeEmailStrings),
  code: stepUpCode,
});

export const EnrolTotpBody = body({
  password: stepUpPassword(AuthMessage.passwordRequired, AuthMessage.passwordString),
});

export const TotpCodeBody = body({
  code: factorCode,
});

export const DisableTotpBody = body({
  password: stepUpPassword(AuthMessage.passwordRequired, AuthMessage.passwordString),
  code: v.pipe(
    requiredString(AuthMessage.codeRequired, AuthMessage.codeString),
    v.description("A current code of the authenticator app, or a recovery code."),
  ),
});

const optionalString = (description: string) =>
  v.optional(v.pipe(v.string(AuthMessage.mfaVerifyStrings), v.description(description)));

export const MfaVerifyBody = v.pipe(
  body({
    mfa_token: v.pipe(
      requiredString(AuthMessage.mfaVerifyFields, AuthMessage.mfaVerifyStrings),
      v.description("The `mfa_token` of the login."),
    ),
    code: optionalString(`A current ${TOTP_DIGITS}-digit code of the authenticator app.`),
    recovery_code: optionalString("One of the recovery codes, instead of `code`."),
  }),
  v.check((input) => (input.code === undefined) !== (input.recovery_code === undefined), AuthMessage.mfaVerifyFields),
);

export const ConfirmEmailChangeBody = body({
  token: code(AuthMessage.tokenRequired, AuthMessage.tokenString),
});

export const RevertEmailChangeBody = body({
  token: v.pipe(
    requiredString(AuthMessage.tokenRequired, AuthMessage.tokenString),
    v.transform((token) => token.trim()),
    v.description("The revert token from the notice mailed to the old address."),
  ),
});

export const DeleteAccountBody = body({
  password: stepUpPassword(AuthMessage.passwordRequired, AuthMessage.passwordString),
  code: stepUpCode,
});

export const RefreshBody = body({
  refresh_token: v.pipe(
    requiredString(AuthMessage.refreshTokenRequired, AuthMessage.refreshTokenString),
    v.description("The refresh token from the last login or refresh."),
  ),
});
