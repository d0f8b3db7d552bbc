import { Hono, type Context } from "hono";
import { sha256Hex } from "../../lib/crypto";
import { badJson, describeRoute, json, ref, text, throttled } from "../../lib/describe";
import { tooManyRequests } from "../../lib/http";
import { MINUTE } from "../../lib/units";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { loginCounter } from "../limits/login";
import { AuthMessage } from "../messages";
import { accountErrors, accountsTag, suspendedAnswer } from "../openapi";
import { MfaVerifyBody } from "../requests";
import { parseAmr, readDetail, recordFailedSignIn, signIn } from "../core/gate";
import { claimChallengeTry, useChallenge } from "../core/pending";
import { checkSecondFactor } from "../core/factor-check";
import { accountFactor, isActive } from "../core/factor";
import { LOGIN_FAILURES_BEFORE_LOCK, MFA_TOKEN_TRIES, MFA_TOKEN_TTL_MS, WRONG_CODES_PER_HOUR } from "../policy";
import { TOTP_DIGITS, TOTP_STEP_SECONDS } from "../../lib/totp";

/** The rules of a TOTP code, as every route that takes one states them. */
export const CODE_RULES = `${TOTP_DIGITS} digits, ${TOTP_STEP_SECONDS}-second steps, SHA-1; a code of the step before or after the current one is accepted (clock drift), and no step is accepted twice`;

/**
 * The second step of a sign-in: the challenge's try is claimed, then a try of the address's (or device's)
 * login attempts, both before the code is looked at; a right code uses the challenge up and passes the gate.
 */
async function secondStep(c: Context<AppEnv>, token: string, typed: { code: string } | { recoveryCode: string }) {
  const { db, log } = c.var;
  const now = Date.now();
  const tokenHash = await sha256Hex(token);
  const challenged = await claimChallengeTry(db, tokenHash, now);
  const account = challenged && (await accountFactor(db, challenged.userId));
  if (!challenged || !account || !isActive(account.factor)) return c.text(AuthMessage.invalidMfaToken, 401);
  // A second-factor try is a login attempt of the address: claimed before the code is checked.
  const deviceId = challenged.deviceId ?? undefined;
  const counter = loginCounter(db, account.email, deviceId, now);
  const [[claim], [lock]] = await db.batch([counter.claim, counter.lock]);
  if (!claim) return tooManyRequests(c, (lock?.lockedUntil ?? now + counter.lockMs) - now, AuthMessage.loginLocked);

  const check = await checkSecondFactor(c.var, { id: challenged.userId, email: account.email }, account.factor, typed);
  if ("capped" in check) return tooManyRequests(c, check.capped, AuthMessage.mfaCodesCapped);
  if ("refused" in check) {
    log.warn("mfa_verify_failed", { userId: challenged.userId });
    recordFailedSignIn(c, challenged.userId, { reason: "second_factor" });
    return c.text(check.refused === "reused" ? AuthMessage.mfaCodeReused : AuthMessage.invalidMfaCode, 401);
  }
  // The token's first success uses it up; a concurrent one that also passed its check gets nothing.
  if (!(await useChallenge(db, tokenHash, now))) return c.text(AuthMessage.invalidMfaToken, 401);
  const proof = {
    account: { id: challenged.userId, email: account.email, signInEpoch: challenged.signInEpoch },
    amr: [...parseAmr(challenged.amr), check.proven, "mfa" as const],
    deviceId,
    detail: readDetail(challenged.detail),
    factorDue: false as const,
  };
  return signIn(c, proof, [counter.release(claim.lockedUntil)]);
}

export const mfaVerify = new Hono<AppEnv>().post(
  "/mfa/verify",
  describeRoute({
    tags: accountsTag,
    summary: "Second step of a login with two-factor authentication",
    description:
      `The \`mfa_token\` of the login and a current code (${CODE_RULES}), or one of the recovery codes. Answers the tokens exactly like a login; ` +
      `the session is created then. An \`mfa_token\` allows ${MFA_TOKEN_TRIES} tries and lives ${MFA_TOKEN_TTL_MS / MINUTE} minutes or until its first success. ` +
      `Wrong codes count toward the address's login lock (${LOGIN_FAILURES_BEFORE_LOCK} attempts, password or code, lock it), and toward the account's ` +
      `${WRONG_CODES_PER_HOUR} wrong codes an hour, whatever the mfa_token: past them codes are refused for the hour and the owner is mailed.`,
    requestExample: { mfa_token: "…", code: "123456" },
    responses: {
      "200": json("Logged in", ref("Login")),
      "400": text("Missing or malformed fields", AuthMessage.mfaVerifyFields, AuthMessage.mfaVerifyStrings, ...badJson),
      "403": suspendedAnswer,
      "401": text(
        "Wrong code, a code already used, or an unknown, used, expired or exhausted mfa_token",
        AuthMessage.invalidMfaCode,
        AuthMessage.mfaCodeReused,
        AuthMessage.invalidMfaToken,
      ),
      ...accountErrors,
      "429": throttled(
        text(
          `The address is locked (${LOGIN_FAILURES_BEFORE_LOCK} failed attempts), or the account's ${WRONG_CODES_PER_HOUR} wrong codes an hour are used up (recovery codes still work)`,
          AuthMessage.loginLocked,
          AuthMessage.mfaCodesCapped,
        ),
      ),
    },
  }),
  jsonBody(MfaVerifyBody),
  async (c) => {
    const { mfa_token: token, code, recovery_code: recoveryCode } = c.req.valid("json");
    return secondStep(c, token, code !== undefined ? { code } : { recoveryCode: recoveryCode! });
  },
);
