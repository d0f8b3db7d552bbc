import type { Context } from "hono";
import type { AppEnv } from "../../types";
import { mailerOf, sendRecoveryCodeUsedNotice } from "../mails";
import { acceptCode, type Factor } from "./factor";
import { useRecoveryCode } from "./recovery-codes";

/**
 * The one check of a second factor, wherever one is asked for (the login's second step, a step-up): a
 * TOTP code, or one of the recovery codes, which is used up and tells the owner by mail how many are
 * left. Answers how the factor was proven (an RFC 8176 `amr` value: `otp`, or our `rec` for a recovery
 * code), or undefined for a wrong code.
 */
export async function checkSecondFactor<E extends AppEnv>(
  c: Context<E>,
  account: { id: number; email: string },
  factor: Factor,
  typed: { code: string } | { recoveryCode: string },
): Promise<"otp" | "rec" | undefined> {
  const { config, db } = c.var;
  if ("code" in typed) return (await acceptCode(db, config, account.id, factor, typed.code, Date.now())) ? "otp" : undefined;
  const left = await useRecoveryCode(db, account.id, typed.recoveryCode);
  if (left === undefined) return undefined;
  await sendRecoveryCodeUsedNotice(mailerOf(c.var), account.email, left);
  return "rec";
}

/** A code typed where either kind is taken (a step-up's `code`): six digits are a TOTP code, anything else a recovery code. */
export function typedCode(code: string): { code: string } | { recoveryCode: string } {
  return /^\s*\d{6}\s*$/.test(code) ? { code } : { recoveryCode: code };
}
