import { Hono } from "hono";
import { pkceChallenge, sha256Hex } from "../../lib/crypto";
import { badJson, describeRoute, text } from "../../lib/describe";
import { SECOND } from "../../lib/units";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { AuthMessage } from "../messages";
import { OAuthTokenBody } from "./requests";
import { signIn } from "../core/gate";
import { fedProof, oauthOperation, signInAnswers } from "./common";
import { accountById, claimLoginCode } from "./store";
import { LOGIN_CODE_TTL_MS } from "../policy";

/**
 * The web flow's last step: the app exchanges the login code with its PKCE verifier. The code is claimed
 * (deleted) before the verifier is compared, so a wrong verifier spends it, and of concurrent exchanges
 * one at most gets a session. The sign-in then passes the gate like any other.
 */
export const tokenExchange = new Hono<AppEnv>().post(
  "/oauth/token",
  describeRoute({
    ...oauthOperation,
    summary: "Exchange a web sign-in's login code",
    description:
      `The \`code\` the web flow handed the app (good for ${LOGIN_CODE_TTL_MS / SECOND} seconds, once) and the app's PKCE \`code_verifier\`. ` +
      "Answers exactly like a login. The code is spent by the first try, right or wrong.",
    requestExample: { code: "…", code_verifier: "…" },
    responses: {
      ...signInAnswers,
      "400": text("Missing or malformed fields", AuthMessage.loginCodeFields, AuthMessage.loginCodeStrings, ...badJson),
      "401": text(
        "Unknown, used or expired code, or a code_verifier that does not match (the code is spent); or a password was set since the sign-in",
        AuthMessage.invalidLoginCode,
        AuthMessage.invalidCredentials,
      ),
    },
  }),
  jsonBody(OAuthTokenBody),
  async (c) => {
    const { code, code_verifier: verifier } = c.req.valid("json");
    const { db, log } = c.var;
    const claimed = await claimLoginCode(db, await sha256Hex(code), Date.now());
    if (!claimed) return c.text(AuthMessage.invalidLoginCode, 401);
    if ((await pkceChallenge(verifier)) !== claimed.codeChallenge) {
      log.warn("oauth_code_verifier_mismatch", { userId: claimed.userId });
      return c.text(AuthMessage.invalidLoginCode, 401);
    }
    const account = await accountById(db, claimed.userId);
    if (!account) return c.text(AuthMessage.invalidLoginCode, 401);
    return signIn(c, fedProof(account, claimed.provider, claimed.signInEpoch));
  },
);
