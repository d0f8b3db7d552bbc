import { Hono } from "hono";
import { sha256Hex } from "../../lib/crypto";
import { badJson, describeRoute, json, ref, text } from "../../lib/describe";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { AuthMessage } from "../messages";
import { ID_TOKEN_MAX_AGE_MS } from "../policy";
import { MINUTE } from "../../lib/units";
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
import { takeIdToken } from "./store";

/** A JSON refusal of the native flow, with its one body as the example. */
const refusalDoc = (description: string, error: string, errorDescription: string) => ({
  ...json(`${description} (\`${error}\`)`, ref("OAuthRefusal")),
  content: {
    "application/json": { schema: ref("OAuthRefusal"), example: { error, error_description: errorDescription } },
  },
});

/**
 * What an id_token is remembered by: the SHA-256 of its issuer and its signed part (header and payload). The signature
 * is left out: it can be spelled anew without the provider (base64url's spare bits, ECDSA's (r, n - s)), the signed
 * part cannot.
 */
function idTokenHash(issuer: string, token: string): Promise<string> {
  return sha256Hex(`${issuer}\n${token.slice(0, token.lastIndexOf("."))}`);
}

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
      "Verifies the id_token: the provider's signature (its JWKS), iss, aud (the client id or one of OAUTH_<N>_AUDIENCES), azp (required with " +
      `several audiences, one of those clients), exp, iat (not ahead of the clock, at most ${ID_TOKEN_MAX_AGE_MS / MINUTE} minutes old); when the token carries a ` +
      "nonce, the body's `nonce` must be it or its hex SHA-256 (Sign in with Apple), and a body `nonce` needs a token that carries one. Then resolves " +
      "the account like the web flow (docs/social-sign-in.md) and answers like a login. An id_token is taken once: a second use, before or " +
      "after the first sign-in, is a 401, whatever the first's outcome.",
    parameters: [providerParam],
    requestExample: { id_token: "eyJ…", nonce: "the raw nonce" },
    responses: {
      ...signInAnswers,
      "400": text("Missing or malformed fields", AuthMessage.idTokenRequired, AuthMessage.idTokenStrings, ...badJson),
      "401": text(
        "A bad signature, another issuer or audience, an azp not this provider's client, an expired, future or too old token, a nonce that does not match, or a token used already",
        AuthMessage.invalidIdToken,
        AuthMessage.nonceMismatch,
        AuthMessage.idTokenUsed,
      ),
      "403": orSuspended(
        refusalDoc(
          "The provider does not vouch for the address, or it is one registration would refuse: no account was made or linked",
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
      // Taken for good before anything else happens: an id_token signs in once, whatever follows.
      if (!(await takeIdToken(c.var.db, await idTokenHash(verified.identity.issuer, token), verified.expiresAt))) {
        log.warn("oauth_id_token_reused", { provider: name });
        return c.text(AuthMessage.idTokenUsed, 401);
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
