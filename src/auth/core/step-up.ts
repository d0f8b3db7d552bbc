import { and, eq, gte, lt, sql, type SQL } from "drizzle-orm";
import type { Context } from "hono";
import { sessions } from "../schema";
import { clientKey } from "../../lib/client-key";
import { tooManyRequests } from "../../lib/http";
import { NO_PASSWORD, verifyPassword } from "../../lib/password";
import type { Database } from "../../types";
import { callerSession, unauthorized, type CallerEnv } from "../caller";
import { callerAccountQuery, toCallerAccount, type CallerAccount } from "./accounts";
import { endSessions } from "./sessions";
import { AuthMessage } from "../messages";
import { checkSecondFactor, typedCode } from "./factor-check";
import { isActive } from "./factor";
import { PASSWORD_CHECKS_PER_SESSION, RECENT_SIGN_IN_MS } from "../policy";

/**
 * Re-authentication of a signed-in caller before what matters (change the password or the address,
 * delete the account, manage the second factor): the password, and while a second factor is on a current
 * code of it (step-up). Counted on the caller's session, not on the address (so neither a stolen access
 * token nor the address's login lock can be used against the owner): one conditional UPDATE claims a
 * check before bcrypt or the code, and refuses once PASSWORD_CHECKS_PER_SESSION claims are wrong or in
 * flight; the wrong one that reaches it ends the session, a right one gives its claim back.
 */

/**
 * What to check: the password (when asked: the body's, undefined when it carried none, and the 400 message
 * for a missing one), and the second factor's `code` while it is on (when asked).
 */
export interface Proof {
  /**
   * `missing` answers a missing password with a 400 (`missingStatus` 401 where an interface says so: the passkey
   * step-ups).
   */
  password?: { value: string | undefined; missing: string; missingStatus?: 400 | 401 };
  /** Asks for the step-up: undefined when the body carried no code. */
  code?: { value: string | undefined };
}

/**
 * The step-up of adding or removing a way in (a passkey, a linked sign-in provider): the password (plus the code with
 * TOTP), as the other step-ups, except that a missing password is a 401 (the passkey interface), not counted; a wrong
 * one is counted. An account without a password proves itself with a recent session, as everywhere.
 */
export function credentialStepUp(c: Context<CallerEnv>, password: string | undefined, code: string | undefined) {
  return reauthenticate(c, {
    password: {
      value: password === "" ? undefined : password,
      missing: AuthMessage.passwordRequired,
      missingStatus: 401,
    },
    code: { value: code },
  });
}

/** Claims one check of the caller's session and reads the account, in one round trip. */
async function claimCheck(db: Database, ofCaller: SQL) {
  const [[claim], [account]] = await db.batch([
    db
      .update(sessions)
      .set({ passwordFailures: sql`${sessions.passwordFailures} + 1` })
      .where(and(ofCaller, lt(sessions.passwordFailures, PASSWORD_CHECKS_PER_SESSION)))
      .returning({ passwordFailures: sessions.passwordFailures }),
    callerAccountQuery(db, ofCaller),
  ]);
  return claim && account ? { claim, account: toCallerAccount(account) } : undefined;
}

/**
 * The password part of a proof. An account with a password: "missing" or "wrong" or passed. One without
 * (NO_PASSWORD, whatever was typed): passed by the code when TOTP is on and asked for (`codeFollows`),
 * else by a session opened within RECENT_SIGN_IN_MS, else "stale".
 */
async function passwordCheck(
  c: Context<CallerEnv>,
  account: CallerAccount,
  typed: string | undefined,
  codeFollows: boolean,
) {
  if (account.password === NO_PASSWORD)
    return codeFollows || account.sessionCreatedAt > Date.now() - RECENT_SIGN_IN_MS ? "passed" : "stale";
  if (typed === undefined) return "missing";
  return (await verifyPassword(typed, account.password, c.var.config.bcryptCost)) ? "passed" : "wrong";
}

/**
 * Checks the proof. Returns the account, or the answer to give: 401 for no session or a session out of
 * checks, a wrong password, a missing or wrong code while two-factor authentication is on.
 */
export async function reauthenticate(
  c: Context<CallerEnv>,
  proof: Proof,
): Promise<{ account: CallerAccount } | { refused: Response }> {
  const { db, log } = c.var;
  const caller = c.var.caller;
  const checked = await claimCheck(db, callerSession(caller, Date.now()));
  if (!checked) return { refused: unauthorized(c) };
  const { claim, account } = checked;
  const ofThisSession = and(eq(sessions.id, caller.sessionId), eq(sessions.userId, caller.userId));
  const giveBack = () =>
    db
      .update(sessions)
      .set({ passwordFailures: sql`${sessions.passwordFailures} - 1` })
      .where(ofThisSession);
  const wrong = async (message: string) => {
    if (claim.passwordFailures >= PASSWORD_CHECKS_PER_SESSION) {
      // Only while the count still stands there: a right check running alongside may have given its claim back.
      await endSessions(
        c,
        (ending) => ending.own(caller, gte(sessions.passwordFailures, PASSWORD_CHECKS_PER_SESSION)),
        () => caller.userId,
      );
      log.warn("session_ended_wrong_passwords", { userId: caller.userId, sessionId: caller.sessionId });
    }
    return { refused: c.text(message, 401) };
  };

  const byPassword =
    proof.password && (await passwordCheck(c, account, proof.password.value, !!proof.code && isActive(account.factor)));
  if (byPassword === "wrong") return wrong(AuthMessage.wrongPassword);
  if (byPassword === "missing" || byPassword === "stale") {
    await giveBack();
    return {
      refused:
        byPassword === "missing"
          ? c.text(proof.password!.missing, proof.password!.missingStatus ?? 400)
          : c.text(AuthMessage.signInAgain, 401),
    };
  }
  if (proof.code && isActive(account.factor)) {
    const code = proof.code.value;
    if (code === undefined) {
      await giveBack();
      return { refused: c.text(AuthMessage.mfaCodeRequired, 401) };
    }
    const check = await checkSecondFactor({ ...c.var, client: clientKey(c) }, account, account.factor, typedCode(code));
    if ("capped" in check) {
      await giveBack();
      return { refused: tooManyRequests(c, check.capped, AuthMessage.mfaCodesCapped) };
    }
    if ("refused" in check)
      return wrong(check.refused === "reused" ? AuthMessage.mfaCodeReused : AuthMessage.invalidMfaCode);
  }
  await giveBack();
  return { account };
}
