import * as v from "valibot";
import { body, requiredString } from "../../lib/validation";
import { AuthMessage } from "../messages";
import { MAX_APP_STATE_CHARS } from "../policy";

/** The request bodies and query of the social sign-in endpoints (the area's other bodies are in auth/requests.ts). */

/** The app's PKCE challenge: the base64url SHA-256 of its code_verifier. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

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
  code_challenge_method: v.pipe(
    v.literal("S256", AuthMessage.codeChallengeMethod),
    v.description("S256 (the only method taken)."),
  ),
  state: v.optional(
    v.pipe(
      v.string(AuthMessage.appStateInvalid),
      v.maxLength(MAX_APP_STATE_CHARS, AuthMessage.appStateInvalid),
      v.description("The app's own state, handed back as it is."),
    ),
  ),
});

export const OAuthTokenBody = body({
  code: v.pipe(
    requiredString(AuthMessage.loginCodeFields, AuthMessage.loginCodeStrings),
    v.description("The login code the flow handed the app."),
  ),
  code_verifier: v.pipe(
    requiredString(AuthMessage.loginCodeFields, AuthMessage.loginCodeStrings),
    v.description("The app's PKCE verifier, whose SHA-256 was the authorize request's code_challenge."),
  ),
});

export const IdTokenBody = body({
  id_token: v.pipe(
    requiredString(AuthMessage.idTokenRequired, AuthMessage.idTokenStrings),
    v.description("The id_token the provider's SDK gave the app."),
  ),
  nonce: v.optional(
    v.pipe(
      v.string(AuthMessage.idTokenStrings),
      v.description(
        "The nonce the app gave the SDK, as it is or as the token carries its hex SHA-256 (Sign in with Apple). Required when the token carries a nonce.",
      ),
    ),
  ),
});
