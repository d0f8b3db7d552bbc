import { Hono } from "hono";
import { badJson, describeRoute, json, ref, text } from "../../lib/describe";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { AuthMessage } from "../messages";
import { orSuspended } from "../openapi";
import { IdTokenBody } from "./requests";
import { signIn } from "../core/gate";
import {
  fedProof,
  knownProvider,
  oauthOperation,
  providerOf,
  providerDown,
  providerParam,
  refusalAnswer,
  signInAnswers,
  unknownProviderAnswer,
} from "./common";
import { appNonce, ProviderUnavailable } from "./provider";
import { resolveAccount } from "./resolve";

/** A JSON refusal of the native flow, with its one body as the example. */
const refusalDoc = (description: string, error: string, errorDescription: string) => ({
  ...json(`${description} (\`${error}\`)`, ref("OAuthRefusal")),
  content: {
    "application/json": { schema: ref("OAuthRefusal"), example: { error, error_description: errorDescription } },
  },
});

/**
 * The native flow: an app signs in with the provider's SDK (Sign in with Apple, Google Sign-In) and sends
 * the id_token it got. The token is verified like the web flow's (the provider's `identity`, provider.ts), for the client id or one of
 * OAUTH_<N>_AUDIENCES, then the account is resolved by the same rule and the gate answers.
 */
export const nativeFlow = new Hono<AppEnv>().post(
  "/oauth/:provider/id-token",
  describeRoute({
    ...oauthOperation,
    summary: "Sign in with a provider's id_token (native apps)",
    description:
      "Verifies the id_token: the provider's signature (its JWKS), iss, aud (the client id or one of OAUTH_<N>_AUDIENCES), exp; when the token carries a " +
      "nonce, the body's `nonce` must be it or its hex SHA-256 (Sign in with Apple), and a body `nonce` needs a token that carries one. Then resolves " +
      "the account like the web flow (docs/social-sign-in.md) and answers like a login.",
    parameters: [providerParam],
    requestExample: { id_token: "eyJ…", nonce: "the raw nonce" },
    responses: {
      ...signInAnswers,
      "400": text("Missing or malformed fields", AuthMessage.idTokenRequired, AuthMessage.idTokenStrings, ...badJson),
      "401": text(
        "A bad signature, another issuer or audience, an expired token, or a nonce that does not match",
        AuthMessage.invalidIdToken,
        AuthMessage.nonceMismatch,
      ),
      "403": orSuspended(
        refusalDoc(
          "The provider does not vouch for the address: no account was made or linked",
          "email_not_verified",
          AuthMessage.emailNotVouched,
        ),
      ),
      "404": text(
        "Not one of OAUTH_PROVIDERS, or a provider without id_tokens (GitHub)",
        AuthMessage.unknownProvider,
        AuthMessage.noIdTokens,
      ),
      "409": refusalDoc(
        "The address is reserved, or its account has another identity of this provider",
        "account_conflict",
        AuthMessage.accountConflict,
      ),
      ...providerDown,
    },
  }),
  knownProvider,
  jsonBody(IdTokenBody),
  async (c) => {
    const { log } = c.var;
    const provider = await providerOf(c);
    if (!provider) return unknownProviderAnswer(c);
    if (!provider.supportsIdTokens) return c.text(AuthMessage.noIdTokens, 404);
    const { name, clientId, audiences } = provider.settings;
    const { id_token: token, nonce } = c.req.valid("json");
    try {
      const verified = await provider.identity(token, { audiences: [clientId, ...audiences], nonce: appNonce(nonce) });
      if ("refused" in verified) {
        log.warn("oauth_id_token_refused", { provider: name, reason: verified.refused });
        return c.text(verified.refused === "nonce" ? AuthMessage.nonceMismatch : AuthMessage.invalidIdToken, 401);
      }
      const resolved = await resolveAccount(c, provider.settings, verified.identity, Date.now());
      if ("refused" in resolved) return refusalAnswer(c, resolved.refused);
      return signIn(c, fedProof(resolved.account, name));
    } catch (err) {
      if (!(err instanceof ProviderUnavailable)) throw err;
      log.warn("oauth_provider_unavailable", { provider: name, reason: err.message });
      return c.text(AuthMessage.providerUnavailable, 503);
    }
  },
);
