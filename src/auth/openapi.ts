import { bearerOnly, text, throttled } from "../lib/describe";
import { AuthMessage } from "./messages";
import { AUTH_BODY_LIMIT_BYTES, RECENT_SIGN_IN_MS } from "./policy";
import { duration } from "../lib/units";

/** The OpenAPI answers every accounts endpoint shares, written once for the routes' descriptions. */

export const accountsTag = ["accounts"];

/** Answers any accounts endpoint may give: body too large, the per-client limit, an unexpected failure. */
export const accountErrors = {
  "413": text(`Body over ${AUTH_BODY_LIMIT_BYTES / 1024} KiB`, AuthMessage.bodyTooLarge),
  "429": throttled(text("Per-client rate limit", AuthMessage.clientThrottled)),
  "500": text("Unexpected failure", AuthMessage.internalError),
};

const wwwAuthenticate = { "WWW-Authenticate": { description: "`Bearer`", schema: { type: "string" } } };

/** The answers of an accounts endpoint that needs `Authorization: Bearer <access token>`. */
export const bearerErrors = {
  "401": {
    ...text("Missing, invalid or expired access token, or its session has ended", AuthMessage.invalidAccessToken),
    headers: wwwAuthenticate,
  },
  "500": text("Unexpected failure", AuthMessage.internalError),
};

/** `security` and answers of a bearer endpoint. */
export const bearer = { tags: accountsTag, security: bearerOnly };

/**
 * The answers of an endpoint that checks the caller's password first: counted on the session, which ends
 * after five wrong ones.
 */
export const passwordChecked = {
  ...bearerErrors,
  "401": {
    ...text(
      "Invalid, expired or revoked access token, a session out of password checks (it ends with the fifth wrong password or code), a wrong password, " +
        `or, while two-factor authentication is on, a missing or wrong \`code\`; for an account without a password, a session opened more than ${duration(RECENT_SIGN_IN_MS)} ago ` +
        "(sign in again)",
      AuthMessage.invalidAccessToken,
      AuthMessage.wrongPassword,
      AuthMessage.signInAgain,
      AuthMessage.mfaCodeRequired,
      AuthMessage.invalidMfaCode,
    ),
    headers: {
      "WWW-Authenticate": { description: "`Bearer`, with the access-token message", schema: { type: "string" } },
    },
  },
  "429": throttled(text("Per-client rate limit", AuthMessage.clientThrottled)),
};

export const passwordRules = [AuthMessage.passwordTooShort, AuthMessage.passwordTooLong];

/** The answers of an endpoint behind Turnstile, when TURNSTILE_SECRET_KEY is set (limits/turnstile.ts). */
export const turnstileAnswers = {
  "403": text("Turnstile refused the token (only with TURNSTILE_SECRET_KEY)", AuthMessage.turnstileFailed),
  "503": text("Turnstile could not be reached (only with TURNSTILE_SECRET_KEY)", AuthMessage.turnstileUnavailable),
};

/** The 403 of a way in to an account an operator suspended (admin API: POST /admin/users/{id}/ban). */
export const suspendedAnswer = text(
  "The account is suspended (an operator's ban) until its end or an unban",
  AuthMessage.accountSuspended,
);

/** A 403 that is either of two answers of different content types (a JSON refusal, or the suspension's text). */
export function orSuspended(answer: Record<string, unknown>): Record<string, unknown> {
  const content = (answer.content ?? {}) as Record<string, unknown>;
  const suspended = suspendedAnswer.content as Record<string, unknown>;
  return {
    ...answer,
    description: `${String(answer.description)}; or the account is suspended`,
    content: { ...content, ...suspended },
  };
}
