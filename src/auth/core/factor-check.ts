import type { AppEnv } from "../../types";
import { mailerOf, sendMfaGuessingNotice, sendRecoveryCodeUsedNotice } from "./mails";
import { acceptCode, claimCodeTry, claimFullWindowNotice, giveBackCodeTry, type Factor } from "./factor";
import { useRecoveryCode } from "./recovery-codes";
import { WRONG_CODES_PER_HOUR } from "../policy";

/**
 * The one check of an active second factor, wherever one is asked for (the login's second step, a
 * step-up): a TOTP code, or one of the recovery codes, which is used up and tells the owner by mail how many
 * are left. A TOTP code first claims a try of the account's hourly window of wrong codes (factor.ts); the
 * claim that fills it tells the owner, once. Answers how the factor was proven (an RFC 8176 `amr` value:
 * `otp`, or our `rec` for a recovery code), why it was not, or how long TOTP codes are refused.
 */
/** What a check needs of the request: its settings, database and logger, and its client (for the mail budget). */
type RequestVars = Pick<AppEnv["Variables"], "config" | "db" | "log"> & { client: string };

export type SecondFactorCheck = { proven: "otp" | "rec" } | { refused: "wrong" | "reused" } | { capped: number };

export async function checkSecondFactor(
  vars: RequestVars,
  account: { id: number; email: string },
  factor: Factor,
  typed: { code: string } | { recoveryCode: string },
): Promise<SecondFactorCheck> {
  return "code" in typed
    ? checkTotp(vars, account, factor, typed.code)
    : checkRecoveryCode(vars, account, typed.recoveryCode);
}

async function checkTotp(
  vars: RequestVars,
  account: { id: number; email: string },
  factor: Factor,
  code: string,
): Promise<SecondFactorCheck> {
  const { config, db, log } = vars;
  const now = Date.now();
  const claim = await claimCodeTry(db, account.id, now);
  if ("waitMs" in claim) return { capped: claim.waitMs };
  const outcome = await acceptCode(db, config, account.id, factor, code, now);
  // Only a wrong code counts: a right one, or one of a step already used (it takes the authenticator), gives its try
  // back.
  if (outcome !== "wrong") await giveBackCodeTry(db, account.id, claim.windowStart);
  if (outcome === "accepted") return { proven: "otp" };
  if (
    outcome === "wrong" &&
    claim.count >= WRONG_CODES_PER_HOUR &&
    (await claimFullWindowNotice(db, account.id, claim.windowStart))
  ) {
    log.warn("mfa_codes_capped", { userId: account.id });
    await sendMfaGuessingNotice(mailerOf(vars, { account: account.id, client: vars.client }), account.email);
  }
  return { refused: outcome };
}

async function checkRecoveryCode(
  vars: RequestVars,
  account: { id: number; email: string },
  typed: string,
): Promise<SecondFactorCheck> {
  const left = await useRecoveryCode(vars.db, account.id, typed);
  if (left === undefined) return { refused: "wrong" };
  await sendRecoveryCodeUsedNotice(mailerOf(vars, { account: account.id, client: vars.client }), account.email, left);
  return { proven: "rec" };
}

/**
 * A code typed where either kind is taken (a step-up's `code`): six digits are a TOTP code, anything else a recovery
 * code.
 */
export function typedCode(code: string): { code: string } | { recoveryCode: string } {
  return /^\s*\d{6}\s*$/.test(code) ? { code } : { recoveryCode: code };
}
