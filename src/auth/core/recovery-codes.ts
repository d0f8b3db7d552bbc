import { and, count, eq } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { mfaRecoveryCodes } from "../schema";
import { sha256Hex } from "../../lib/crypto";
import type { Database } from "../../types";
import { RECOVERY_CODE_COUNT } from "../policy";

/**
 * Recovery codes: ten single-use codes shown once when the factor is turned on (or renewed), stored as
 * SHA-256 (each is 100 random bits), each used up by one conditional DELETE.
 */

/** Crockford's base32: no I, L, O or U, so what is read aloud or copied by hand survives. */
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/** 20 characters of 5 bits: 100 bits each. */
const RECOVERY_CODE_CHARS = 20;

/** Ten new recovery codes, as shown once to the user (`XXXXX-XXXXX-XXXXX-XXXXX`). */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const chars = Array.from(
      crypto.getRandomValues(new Uint8Array(RECOVERY_CODE_CHARS)),
      (byte) => CROCKFORD[byte & 31],
    ).join("");
    return chars.match(/.{5}/g)!.join("-");
  });
}

/** A recovery code as typed, in the one form it is stored in: case, dashes, spaces and look-alikes forgiven. */
export function normalizeRecoveryCode(typed: string): string {
  return typed.toUpperCase().replace(/[\s-]/g, "").replace(/O/g, "0").replace(/[IL]/g, "1");
}

const recoveryCodeHash = (typed: string) => sha256Hex(normalizeRecoveryCode(typed));

/**
 * Uses up a recovery code of the account (one conditional DELETE); the number left, or undefined when it was not one.
 */
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

/** Stores a new set of recovery codes (as hashes), the old set gone, in one transaction with `alongside`. */
export async function replaceRecoveryCodes(
  db: Database,
  userId: number,
  codes: string[],
  alongside: BatchItem<"sqlite">[] = [],
): Promise<void> {
  const hashes = await Promise.all(codes.map(recoveryCodeHash));
  await db.batch([
    db.delete(mfaRecoveryCodes).where(eq(mfaRecoveryCodes.userId, userId)),
    db.insert(mfaRecoveryCodes).values(hashes.map((codeHash) => ({ userId, codeHash }))),
    ...alongside,
  ]);
}
