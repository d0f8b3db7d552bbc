import { and, count, eq, lt, sql } from "drizzle-orm";
import type { Config } from "../config";
import { mfaFactors, mfaRecoveryCodes } from "../db/schema";
import { open, seal, sealedUnder } from "../lib/secret-box";
import { sha256Hex } from "../lib/crypto";
import { matchingStep } from "../lib/totp";
import type { Database } from "../types";

/**
 * Checking an account's second factor, wherever it is asked for (the login's second step, and the
 * step-up of sensitive changes): a TOTP code, accepted once per time step per account, ever; or a
 * recovery code, single use. Each is decided by one conditional write, never by a value read before it.
 */

export const RECOVERY_CODE_COUNT = 10;
/** Crockford's base32: no I, L, O or U, so what is read aloud or copied by hand survives. */
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/** 20 characters of 5 bits: 100 bits each. */
const RECOVERY_CODE_CHARS = 20;

/** Ten new recovery codes, as shown once to the user (`XXXXX-XXXXX-XXXXX-XXXXX`). */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const chars = Array.from(crypto.getRandomValues(new Uint8Array(RECOVERY_CODE_CHARS)), (byte) => CROCKFORD[byte & 31]).join("");
    return chars.match(/.{5}/g)!.join("-");
  });
}

/** A recovery code as typed, in the one form it is stored in: case, dashes, spaces and look-alikes forgiven. */
export function normalizeRecoveryCode(typed: string): string {
  return typed
    .toUpperCase()
    .replace(/[\s-]/g, "")
    .replace(/O/g, "0")
    .replace(/[IL]/g, "1");
}

export const recoveryCodeHash = (typed: string) => sha256Hex(normalizeRecoveryCode(typed));

/** The account's factor and how many recovery codes are left: what /auth/me and the checks read. */
export function factorQuery(db: Database, userId: number) {
  return db
    .select({
      status: mfaFactors.status,
      sealedSecret: mfaFactors.sealedSecret,
      recoveryCodes: sql<number>`(SELECT ${count()} FROM ${mfaRecoveryCodes} WHERE ${mfaRecoveryCodes.userId} = ${userId})`,
    })
    .from(mfaFactors)
    .where(eq(mfaFactors.userId, userId));
}

/**
 * Accepts a TOTP code of the account's active factor: the step it matches (±1 for clock drift) is
 * claimed with `UPDATE … SET last_used_step = step WHERE last_used_step < step`, so a code (and any code
 * of an earlier step) is never accepted twice, not even by concurrent requests.
 */
export async function acceptTotp(db: Database, config: Pick<Config, "mfaKeys">, userId: number, sealedSecret: string, code: string, now: number): Promise<boolean> {
  const secret = await open(sealedSecret, config.mfaKeys);
  if (!secret) return false;
  const step = await matchingStep(secret, code.trim(), now);
  if (step === undefined) return false;
  const [claimed] = await db
    .update(mfaFactors)
    .set({ lastUsedStep: step })
    .where(and(eq(mfaFactors.userId, userId), eq(mfaFactors.status, "active"), lt(mfaFactors.lastUsedStep, step)))
    .returning({ userId: mfaFactors.userId });
  if (!claimed) return false;
  // After a key rotation, each secret is sealed again under the current key the first time it is used.
  const current = config.mfaKeys[0]!;
  if (!(await sealedUnder(sealedSecret, current))) {
    await db
      .update(mfaFactors)
      .set({ sealedSecret: await seal(secret, current) })
      .where(and(eq(mfaFactors.userId, userId), eq(mfaFactors.sealedSecret, sealedSecret)));
  }
  return true;
}

/** Uses up a recovery code of the account (one conditional DELETE); the number left, or undefined when it was not one. */
export async function useRecoveryCode(db: Database, userId: number, typed: string): Promise<number | undefined> {
  const [[used], [left]] = await db.batch([
    db
      .delete(mfaRecoveryCodes)
      .where(and(eq(mfaRecoveryCodes.userId, userId), eq(mfaRecoveryCodes.codeHash, await recoveryCodeHash(typed))))
      .returning({ userId: mfaRecoveryCodes.userId }),
    db.select({ n: count() }).from(mfaRecoveryCodes).where(eq(mfaRecoveryCodes.userId, userId)),
  ]);
  return used ? left!.n : undefined;
}

/** The outcome of a second-factor check with `code`, a TOTP code or a recovery code. */
export type FactorCheck = { ok: true; recoveryCodesLeft?: number } | { ok: false };

/** Checks `code` as a TOTP code, then (if it is not six digits) as a recovery code. */
export async function checkFactorCode(db: Database, config: Pick<Config, "mfaKeys">, userId: number, sealedSecret: string, code: string, now: number): Promise<FactorCheck> {
  if (/^\s*\d{6}\s*$/.test(code)) return { ok: await acceptTotp(db, config, userId, sealedSecret, code, now) };
  const left = await useRecoveryCode(db, userId, code);
  return left === undefined ? { ok: false } : { ok: true, recoveryCodesLeft: left };
}
