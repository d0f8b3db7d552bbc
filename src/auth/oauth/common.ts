import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { OAuthConfig, OAuthProvider } from "../../config";
import { json, ref, text } from "../../lib/describe";
import type { AppEnv } from "../../types";
import { AuthMessage } from "../messages";
import { accountErrors, accountsTag, suspendedAnswer } from "../openapi";
import type { SignInProof } from "../core/gate";
import type { OAuthRefusalJson } from "../shapes";
import type { SignInProvider } from "./provider";
import { signInProvider } from "./providers";
import type { Refusal } from "./resolve";
import type { SignInAccount } from "./store";

/**
 * What the social sign-in routes share: the provider of the path, the proof they hand the gate, their documented
 * answers.
 */

/** The social sign-in settings, when they are usable (knownProvider answers the 503 when they are not). */
export function oauthSettings(c: Context<AppEnv>): OAuthConfig | undefined {
  const oauth = c.var.config.oauth;
  return "problem" in oauth ? undefined : oauth;
}

/** The path's provider, if it is one of OAUTH_PROVIDERS. */
function providerSettingsOf(c: Context<AppEnv>): OAuthProvider | undefined {
  return oauthSettings(c)?.providers.get(c.req.param("provider") ?? "");
}

/** The path's provider, if it is one of OAUTH_PROVIDERS (loaded on first use, providers.ts). */
export async function providerOf(c: Context<AppEnv>): Promise<SignInProvider | undefined> {
  const settings = providerSettingsOf(c);
  return settings && signInProvider(settings);
}

/**
 * Before the request's query or body is looked at: a 503 while an OAUTH_* setting is unusable (only social
 * sign-in is refused, and the log names the setting), a 404 for a provider not in OAUTH_PROVIDERS.
 */
export const knownProvider = createMiddleware<AppEnv>(async (c, next) => {
  const oauth = c.var.config.oauth;
  if ("problem" in oauth) {
    c.var.log.error("social_sign_in_unavailable", { errorName: "ConfigError", errorMessage: oauth.problem });
    return c.text(AuthMessage.socialSignInUnavailable, 503);
  }
  if (!providerSettingsOf(c)) return c.text(AuthMessage.unknownProvider, 404);
  await next();
});

/** The path names no usable provider: a 503 while the settings are unusable, else the 404. */
export const unknownProviderAnswer = (c: Context<AppEnv>) =>
  oauthSettings(c) ? c.text(AuthMessage.unknownProvider, 404) : c.text(AuthMessage.socialSignInUnavailable, 503);

/** The gate's proof of a social sign-in: `fed`, and the second factor due while TOTP is on. */
export function fedProof(account: SignInAccount, provider: string, signInEpoch = account.signInEpoch): SignInProof {
  return {
    account: { id: account.id, email: account.email, signInEpoch },
    amr: ["fed"],
    deviceId: undefined,
    factorDue: account.totpStatus === "active",
    detail: { provider },
  };
}

/** The native flow's JSON refusal: 403 for an address not vouched for, 409 for a conflict. */
export function refusalAnswer(c: Context, refusal: Refusal) {
  if (refusal === "email_not_verified") {
    const answer: OAuthRefusalJson = { error: refusal, error_description: AuthMessage.emailNotVouched };
    return c.json(answer, 403);
  }
  const answer: OAuthRefusalJson = { error: refusal, error_description: AuthMessage.accountConflict };
  return c.json(answer, 409);
}

export const providerParam = {
  name: "provider",
  in: "path",
  required: true,
  description: "A name of OAUTH_PROVIDERS: `google`, `apple`, `github`, or another OpenID provider's",
  schema: { type: "string", pattern: "^[a-z0-9]+$" },
};

/** The answers a social sign-in gives like a login: the tokens, or the second-factor challenge. */
export const signInAnswers = {
  "200": json(
    "Signed in, exactly like POST /auth/login; or, for an account with two-factor authentication, the challenge to answer at POST /auth/mfa/verify",
    {
      oneOf: [ref("Login"), ref("MfaChallenge")],
    },
  ),
  "403": suspendedAnswer,
  ...accountErrors,
};

export const unknownProvider = {
  "404": text("Not one of OAUTH_PROVIDERS", AuthMessage.unknownProvider),
  "503": text("An OAUTH_ setting is unusable (the log names it)", AuthMessage.socialSignInUnavailable),
};
export const providerDown = {
  "503": text(
    "An OAUTH_ setting is unusable (the log names it), or the provider's discovery document, keys or endpoints could not be reached",
    AuthMessage.socialSignInUnavailable,
    AuthMessage.providerUnavailable,
  ),
};
export const oauthOperation = { tags: accountsTag };
