import { and, eq, gte, lt, sql, type SQL } from "drizzle-orm";
import type { Context } from "hono";
import { mfaFactors, mfaRecoveryCodes, sessions, users } from "../db/schema";
import { verifyPassword } from "../lib/password";
import type { AccessClaims } from "../lib/access-token";
import type { Database } from "../types";
import { callerSession, unauthorized, type CallerEnv } from "./caller";
import { PASSWORD_CHECKS_PER_SESSION } from "./limits";
import { mailerOf, sendRecoveryCodeUsedNotice } from "./mails";
import { AuthMessage } from "./messages";
import { checkFactorCode } from "./second-factor";

/**
 * Re-authentication of a logged-in caller before what matters (change the password or the address,
 * delete the account, manage the second factor): the password, and while two-factor authentication is on
 * a current code of it (step-up). Counted on the caller's session, not on the address (so neither a
 * stolen access token nor the address's login lock can be used against the owner): one conditional
 * UPDATE claims a check before bcrypt or the code, and refuses once PASSWORD_CHECKS_PER_SESSION claims
 * are wrong or in flight; the wrong one that reaches it ends the session, a right one gives its claim back.
 */

export interface CallerAccount {
  id: number;
  email: string;
  password: string;
  isVerified: boolean;
  createdAt: number;
  /** The second factor: "active", "pending" (enrolled, not confirmed) or null; its sealed secret. */
  factorStatus: "pending" | "active" | null;
  sealedSecret: string | null;
  recoveryCodes: number;
}

/** The account of the session `ofSession` selects (a condition on `sessions`), if that session is live. */
function callerAccountQuery(db: Database, ofSession: SQL) {
  return db
    .select({
      id: users.id,
      email: users.email,
      password: users.password,
      isVerified: users.isVerified,
      createdAt: users.createdAt,
      factorStatus: sql<"pending" | "active" | null>`(SELECT ${mfaFactors.status} FROM ${mfaFactors} WHERE ${mfaFactors.userId} = ${users.id})`,
      sealedSecret: sql<string | null>`(SELECT ${mfaFactors.sealedSecret} FROM ${mfaFactors} WHERE ${mfaFactors.userId} = ${users.id})`,
      recoveryCodes: sql<number>`(SELECT count(*) FROM ${mfaRecoveryCodes} WHERE ${mfaRecoveryCodes.userId} = ${users.id})`,
    })
    .from(users)
    .innerJoin(sessions, eq(sessions.userId, users.id))
    .where(ofSession);
}

/** The caller's account, read in one query with the check that the caller's session is live. */
export async function callerAccount(c: Context<CallerEnv>, caller: AccessClaims): Promise<CallerAccount | undefined> {
  const [account] = await callerAccountQuery(c.var.db, callerSession(caller, Date.now()));
  return account;
}

/** What to check: the password (when given), and the second factor's `code` while it is on (when asked). */
export interface Proof {
  password?: string;
  /** Asks for the step-up: undefined when the body carried no code. */
  code?: { value: string | undefined };
}

/**
 * Checks the proof. Returns the account, or the answer to give: 401 for no session or a session out of
 * checks, a wrong password, a missing or wrong code while two-factor authentication is on.
 */
export async function reauthenticate(c: Context<CallerEnv>, proof: Proof): Promise<{ account: CallerAccount } | { refused: Response }> {
  const { config, db, log } = c.var;
  const caller = c.var.caller;
  const ofCaller = callerSession(caller, Date.now());
  const [[claim], [account]] = await db.batch([
    db
      .update(sessions)
      .set({ passwordFailures: sql`${sessions.passwordFailures} + 1` })
      .where(and(ofCaller, lt(sessions.passwordFailures, PASSWORD_CHECKS_PER_SESSION)))
      .returning({ passwordFailures: sessions.passwordFailures }),
    callerAccountQuery(db, ofCaller),
  ]);
  if (!claim || !account) return { refused: unauthorized(c) };
  const ofThisSession = and(eq(sessions.id, caller.sessionId), eq(sessions.userId, caller.userId));
  const giveBack = () => db.update(sessions).set({ passwordFailures: sql`${sessions.passwordFailures} - 1` }).where(ofThisSession);
  const wrong = async (message: string) => {
    if (claim.passwordFailures >= PASSWORD_CHECKS_PER_SESSION) {
      // Only while the count still stands there: a right check running alongside may have given its claim back.
      await db.delete(sessions).where(and(ofThisSession, gte(sessions.passwordFailures, PASSWORD_CHECKS_PER_SESSION)));
      log.warn("session_ended_wrong_passwords", { userId: caller.userId, sessionId: caller.sessionId });
    }
    return { refused: c.text(message, 401) };
  };

  if (proof.password !== undefined && !(await verifyPassword(proof.password, account.password, config.bcryptCost))) {
    return wrong(AuthMessage.wrongPassword);
  }
  if (proof.code && account.factorStatus === "active") {
    const code = proof.code.value;
    if (code === undefined) {
      await giveBack();
      return { refused: c.text(AuthMessage.mfaCodeRequired, 401) };
    }
    const check = await checkFactorCode(db, config, account.id, account.sealedSecret!, code, Date.now());
    if (!check.ok) return wrong(AuthMessage.invalidMfaCode);
    if (check.recoveryCodesLeft !== undefined) await sendRecoveryCodeUsedNotice(mailerOf(c.var), account.email, check.recoveryCodesLeft);
  }
  await giveBack();
  return { account };
}
