import { Hono, type Context } from "hono";
import { pkceChallenge, randomToken, sha256Hex } from "../../lib/crypto";
import { describeRoute, text, throttled } from "../../lib/describe";
import { base64url } from "../../lib/encoding";
import { clientRateLimit } from "../../lib/request-limits";
import { MINUTE, SECOND } from "../../lib/units";
import { queryParams } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { AuthMessage } from "../messages";
import { AuthorizeQuery } from "./requests";
import {
  knownProvider,
  oauthOperation,
  oauthSettings,
  providerDown,
  providerParam,
  unknownProvider,
  providerOf,
  unknownProviderAnswer,
} from "./common";
import { ProviderUnavailable } from "./provider";
import { resolveAccount } from "./resolve";
import { claimState, saveLoginCode, saveState, type OAuthState } from "./store";
import { LOGIN_CODE_TTL_MS, STATE_TTL_MS } from "../policy";

/**
 * The web flow (docs/social-sign-in.md): authorize sends the browser to the provider with a state of the
 * service's own, kept server-side with everything the callback needs (no cookie: webviews lose them); the
 * callback claims that state, exchanges the provider's code, resolves the account, and sends the browser
 * back to the app with a one-time login code, which the app exchanges with its PKCE verifier
 * (POST /auth/oauth/token). No token ever travels in a URL.
 */

/** This service's callback for the provider `name`, absolute, from the request's origin. */
function callbackUrl(c: Context<AppEnv>, name: string): string {
  return `${new URL(c.req.url).origin}/auth/oauth/${name}/callback`;
}

/** The app's redirect_uri with `values` added to its query. */
function toApp(c: Context<AppEnv>, state: OAuthState, values: Record<string, string>) {
  const url = new URL(state.redirectUri);
  for (const [name, value] of Object.entries({ ...values, ...(state.appState !== null && { state: state.appState }) }))
    url.searchParams.set(name, value);
  return c.redirect(url.href, 302);
}

/** A provider's `error` handed on as it is when it looks like one (RFC 6749: a short code), else as `access_denied`. */
const providerError = (error: string) => (/^[A-Za-z0-9_.-]{1,64}$/.test(error) ? error : "access_denied");

async function callback(c: Context<AppEnv>, params: URLSearchParams) {
  const { db, log } = c.var;
  const provider = await providerOf(c);
  if (!provider) return unknownProviderAnswer(c);
  const { name } = provider.settings;
  const now = Date.now();
  const stateValue = params.get("state");
  const state = stateValue ? await claimState(db, await sha256Hex(stateValue), now) : undefined;
  if (!stateValue || !state || state.provider !== name) return c.text(AuthMessage.unknownState, 400);
  const error = params.get("error");
  if (error !== null) return toApp(c, state, { error: providerError(error) });
  if (!params.get("code")) return toApp(c, state, { error: "invalid_request" });
  const exchanged = await provider.exchange({
    params,
    stateValue,
    codeVerifier: state.codeVerifier,
    nonce: state.nonce,
    callbackUrl: callbackUrl(c, name),
  });
  if ("error" in exchanged) {
    const { error, reason } = exchanged;
    log.warn("oauth_exchange_failed", { provider: name, error, reason });
    return toApp(c, state, { error });
  }
  const resolved = await resolveAccount(c, provider.settings, exchanged.identity, now);
  if ("refused" in resolved) return toApp(c, state, { error: resolved.refused });
  const code = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const { id: userId, signInEpoch } = resolved.account;
  await saveLoginCode(db, {
    codeHash: await sha256Hex(code),
    userId,
    signInEpoch,
    provider: name,
    codeChallenge: state.codeChallenge,
    expiresAt: now + LOGIN_CODE_TTL_MS,
  });
  return toApp(c, state, { code });
}

const callbackDescription = {
  ...oauthOperation,
  parameters: [providerParam],
  responses: {
    "302": {
      description:
        "Back to the app's redirect_uri with `code` (the login code) and `state` (the app's), or with `error` and `state`",
    },
    "400": text(
      "No state, or one that is unknown, used, expired or another provider's: no redirect",
      AuthMessage.unknownState,
    ),
    ...unknownProvider,
  },
};

export const webFlow = new Hono<AppEnv>()
  .use(
    "/oauth/:provider/authorize",
    clientRateLimit(
      (env) => ({ client: env.AUTH_RATE_LIMITER, network: env.AUTH_RATE_LIMITER_IPV6_48 }),
      ["GET"],
      AuthMessage.clientThrottled,
    ),
  )
  .get(
    "/oauth/:provider/authorize",
    describeRoute({
      ...oauthOperation,
      summary: "Start a web sign-in with a provider",
      description:
        "Redirects to the provider's authorization endpoint (response_type=code, scope `openid email`; GitHub: `read:user user:email`) with a state, " +
        `a nonce and a PKCE challenge of the service's own. The state lives ${STATE_TTL_MS / MINUTE} minutes, server-side, and is used once.`,
      parameters: [providerParam],
      responses: {
        "302": { description: "To the provider's authorization endpoint" },
        "400": text(
          "Malformed query, or a redirect_uri not in OAUTH_REDIRECT_URLS: no redirect",
          AuthMessage.redirectUriRequired,
          AuthMessage.redirectUriNotAllowed,
          AuthMessage.codeChallengeRequired,
          AuthMessage.codeChallengeInvalid,
          AuthMessage.codeChallengeMethod,
          AuthMessage.appStateInvalid,
        ),
        "404": text(
          "Not one of OAUTH_PROVIDERS, or no client secret for its web flow",
          AuthMessage.unknownProvider,
          AuthMessage.noWebSignIn,
        ),
        "429": throttled(text("Per-client rate limit", AuthMessage.clientThrottled)),
        ...providerDown,
      },
    }),
    knownProvider,
    queryParams(AuthorizeQuery),
    async (c) => {
      const { db } = c.var;
      const provider = await providerOf(c);
      if (!provider) return unknownProviderAnswer(c);
      const { redirect_uri: redirectUri, code_challenge: codeChallenge, state: appState } = c.req.valid("query");
      if (!oauthSettings(c)?.redirectUrls.includes(redirectUri)) return c.text(AuthMessage.redirectUriNotAllowed, 400);
      const { name, clientSecret } = provider.settings;
      if (!clientSecret) return c.text(AuthMessage.noWebSignIn, 404);
      const [state, codeVerifier, nonce] = [randomToken(), randomToken(), randomToken()];
      const request = {
        callbackUrl: callbackUrl(c, name),
        state,
        nonce,
        codeChallenge: await pkceChallenge(codeVerifier),
      };
      const url = await provider.authorizeUrl(request).catch((err: unknown) => {
        if (err instanceof ProviderUnavailable) return undefined;
        throw err;
      });
      if (!url) return c.text(AuthMessage.providerUnavailable, 503);
      const stored = {
        provider: name,
        redirectUri,
        appState: appState ?? null,
        codeChallenge,
        codeVerifier,
        nonce,
        expiresAt: Date.now() + STATE_TTL_MS,
      };
      await saveState(db, { stateHash: await sha256Hex(state), ...stored });
      return c.redirect(url.href, 302);
    },
  )
  .get(
    "/oauth/:provider/callback",
    describeRoute({
      ...callbackDescription,
      summary: "The provider's redirect back (web sign-in)",
      description:
        "Claims the state (once), exchanges the provider's code with the service's PKCE verifier, verifies the id_token (signature by the provider's keys, " +
        "iss, aud, exp, nonce) or reads GitHub's user API, resolves the account (docs/social-sign-in.md), and sends the browser back to the app with a " +
        `login code good for ${LOGIN_CODE_TTL_MS / SECOND} seconds. \`error\` values: the provider's own (e.g. access_denied), invalid_request, invalid_grant, ` +
        "invalid_token, temporarily_unavailable, email_not_verified, account_conflict.",
    }),
    knownProvider,
    (c) => callback(c, new URL(c.req.url).searchParams),
  )
  .post(
    "/oauth/:provider/callback",
    describeRoute({
      ...callbackDescription,
      summary: "The provider's redirect back, posted (Sign in with Apple's form_post)",
      description:
        "The same as the GET, with `code`, `state` (or `error`) in an `application/x-www-form-urlencoded` body.",
    }),
    knownProvider,
    async (c) => {
      const form = await c.req.parseBody().catch(() => ({}));
      const params = new URLSearchParams(
        Object.entries(form).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
      );
      return callback(c, params);
    },
  );
