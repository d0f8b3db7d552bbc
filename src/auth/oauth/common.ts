import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { OAuthProvider } from "../../config";
import { json, ref, text } from "../../lib/describe";
import type { AppEnv } from "../../types";
import { AuthMessage } from "../messages";
import { accountErrors, accountsTag } from "../openapi";
import type { SignInProof } from "../session/gate";
import type { OAuthRefusalJson } from "../shapes";
import type { Refusal } from "./resolve";
import type { SignInAccount } from "./store";

/** What the social sign-in routes share: the provider of the path, the proof they hand the gate, their documented answers. */

/** The path's provider, if it is one of OAUTH_PROVIDERS. */
export function providerOf(c: Context<AppEnv>): OAuthProvider | undefined {
  return c.var.config.oauth.providers.get(c.req.param("provider") ?? "");
}

/** A 404 for a provider not in OAUTH_PROVIDERS, before the request's query or body is looked at. */
export const knownProvider = createMiddleware<AppEnv>(async (c, next) => {
  if (!providerOf(c)) return c.text(AuthMessage.unknownProvider, 404);
  await next();
});

export const unknownProviderAnswer = (c: Context<AppEnv>) => c.text(AuthMessage.unknownProvider, 404);

/** The gate's proof of a social sign-in: `fed`, and the second factor due while TOTP is on. */
export function fedProof(account: SignInAccount, provider: string, signInEpoch = account.signInEpoch): SignInProof {
  return {
    account: { id: account.id, email: account.email, signInEpoch },
    amr: ["fed"],
    deviceId: undefined,
    factorDue: account.totpStatus === "active",
    provider,
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
  "200": json("Signed in, exactly like POST /auth/login; or, for an account with two-factor authentication, the challenge to answer at POST /auth/mfa/verify", {
    oneOf: [ref("Login"), ref("MfaChallenge")],
  }),
  ...accountErrors,
};

export const unknownProvider = { "404": text("Not one of OAUTH_PROVIDERS", AuthMessage.unknownProvider) };
export const providerDown = { "503": text("The provider's discovery document, keys or endpoints could not be reached", AuthMessage.providerUnavailable) };
export const oauthOperation = { tags: accountsTag };
