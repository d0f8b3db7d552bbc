import * as v from "valibot";
import { MAX_PASSWORD_BYTES, MIN_PASSWORD_CHARS, normalizePassword, passwordBytes } from "../lib/password";
import { KiB } from "../lib/units";
import { body, requiredString } from "../lib/validation";
import { AuthMessage } from "./messages";

/** The request body of each accounts endpoint: validation, OpenAPI and client types come from these. */

/** Accounts bodies are a few short fields; 16 KiB is far above any real one. */
export const AUTH_BODY_LIMIT_BYTES = 16 * KiB;

const MAX_EMAIL_LENGTH = 254;
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
function plausibleEmail(email: string): boolean {
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
    v.check((password) => passwordBytes(normalizePassword(password)) <= MAX_PASSWORD_BYTES, AuthMessage.passwordTooLong),
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
    v.description("The 6-digit code from the e-mail."),
  );
}

export const RegisterBody = body({
  email: accountEmail(AuthMessage.emailAndPasswordRequired, AuthMessage.emailAndPasswordStrings),
  password: newPassword(AuthMessage.emailAndPasswordRequired, AuthMessage.emailAndPasswordStrings),
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
        v.description("The `device_token` of an earlier successful login from this device: judged on this device's own failed logins only."),
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
});

export const ForgotPasswordBody = body({
  email: lookupEmail(AuthMessage.emailRequired, AuthMessage.emailString),
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
const stepUpCode = v.optional(
  v.pipe(
    v.string(AuthMessage.codeString),
    v.description("While two-factor authentication is on: a current code of the authenticator app, or a recovery code."),
  ),
);

/** A code of the authenticator app, or a recovery code. */
const factorCode = v.pipe(requiredString(AuthMessage.codeRequired, AuthMessage.codeString), v.description("A current 6-digit code of the authenticator app."));

/**
 * The password a step-up asks for: required of an account that has one (a 400 from the step-up), left out
 * by an account without one (auth/session/step-up.ts).
 */
function stepUpPassword(required: string, notString: string) {
  return v.optional(
    v.pipe(
      anyPassword(required, notString),
      v.description("The account's password; an account without one (`has_password` false) leaves it out and needs a session opened in the last 10 minutes."),
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
  code: v.pipe(requiredString(AuthMessage.codeRequired, AuthMessage.codeString), v.description("A current code of the authenticator app, or a recovery code.")),
});

const optionalString = (description: string) => v.optional(v.pipe(v.string(AuthMessage.mfaVerifyStrings), v.description(description)));

export const MfaVerifyBody = v.pipe(
  body({
    mfa_token: v.pipe(requiredString(AuthMessage.mfaVerifyFields, AuthMessage.mfaVerifyStrings), v.description("The `mfa_token` of the login.")),
    code: optionalString("A current 6-digit code of the authenticator app."),
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

/** The app's PKCE challenge: the base64url SHA-256 of its code_verifier. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** The longest app `state` kept and handed back. */
export const MAX_APP_STATE_CHARS = 512;

export const AuthorizeQuery = body({
  redirect_uri: v.pipe(
    requiredString(AuthMessage.redirectUriRequired, AuthMessage.redirectUriRequired),
    v.description("Where the flow returns: one of OAUTH_REDIRECT_URLS, exactly."),
  ),
  code_challenge: v.pipe(
    requiredString(AuthMessage.codeChallengeRequired, AuthMessage.codeChallengeRequired),
    v.regex(S256_CHALLENGE, AuthMessage.codeChallengeInvalid),
    v.description("The app's PKCE challenge: base64url(SHA-256(code_verifier)), 43 characters."),
  ),
  code_challenge_method: v.pipe(v.literal("S256", AuthMessage.codeChallengeMethod), v.description("S256 (the only method taken).")),
  state: v.optional(
    v.pipe(v.string(AuthMessage.appStateInvalid), v.maxLength(MAX_APP_STATE_CHARS, AuthMessage.appStateInvalid), v.description("The app's own state, handed back as it is.")),
  ),
});

export const OAuthTokenBody = body({
  code: v.pipe(requiredString(AuthMessage.loginCodeFields, AuthMessage.loginCodeStrings), v.description("The login code the flow handed the app.")),
  code_verifier: v.pipe(
    requiredString(AuthMessage.loginCodeFields, AuthMessage.loginCodeStrings),
    v.description("The app's PKCE verifier, whose SHA-256 was the authorize request's code_challenge."),
  ),
});

export const IdTokenBody = body({
  id_token: v.pipe(requiredString(AuthMessage.idTokenRequired, AuthMessage.idTokenStrings), v.description("The id_token the provider's SDK gave the app.")),
  nonce: v.optional(
    v.pipe(
      v.string(AuthMessage.idTokenStrings),
      v.description("The nonce the app gave the SDK, as it is or as the token carries its hex SHA-256 (Sign in with Apple). Required when the token carries a nonce."),
    ),
  ),
});
