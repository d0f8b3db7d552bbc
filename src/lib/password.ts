import bcrypt from "bcryptjs";

/** bcrypt reads at most 72 bytes of a password; longer ones are refused rather than silently cut. */
export const MAX_PASSWORD_BYTES = 72;
export const MIN_PASSWORD_CHARS = 8;

export function passwordBytes(password: string): number {
  return new TextEncoder().encode(password).length;
}

/**
 * The form a password is hashed and checked in: Unicode NFKC, as NIST SP 800-63B (5.1.1.2) recommends,
 * so that the same password typed on two keyboards (a precomposed `é` or `e` plus a combining accent, a
 * full-width digit or an ASCII one) is the same password. Nothing else is changed: no trimming, no case.
 */
export function normalizePassword(password: string): string {
  return password.normalize("NFKC");
}

export function hashPassword(password: string, cost: number): Promise<string> {
  return bcrypt.hash(normalizePassword(password), cost);
}

// One dummy hash per cost and isolate: comparing against it makes an unknown e-mail cost the same
// bcrypt work as a wrong password, so response times do not tell which e-mails are registered.
const dummyHashes = new Map<number, Promise<string>>();

function dummyHash(cost: number): Promise<string> {
  let hash = dummyHashes.get(cost);
  if (!hash) {
    hash = bcrypt.hash("dummy password for unknown accounts", cost);
    dummyHashes.set(cost, hash);
  }
  return hash;
}

/** One bcrypt comparison; a password longer than bcrypt can read is wrong (its first 72 bytes must not unlock). */
async function matches(password: string, hash: string): Promise<boolean> {
  return (await bcrypt.compare(password, hash)) && passwordBytes(password) <= MAX_PASSWORD_BYTES;
}

/**
 * The stored password of an account whose password was cleared (an undone e-mail change): no password
 * matches it, so only a reset lets anyone in again.
 */
export const NO_PASSWORD = "!";

/**
 * True only when `hash` is present and matches the password. Always does at least one full bcrypt
 * comparison. Accounts created before passwords were normalized hold a hash of the password as it was
 * typed: when that differs from its NFKC form, the typed form is tried too.
 */
export async function verifyPassword(password: string, hash: string | undefined, cost: number): Promise<boolean> {
  const normalized = normalizePassword(password);
  if (hash === undefined || hash === NO_PASSWORD) {
    await matches(normalized, await dummyHash(cost));
    return false;
  }
  return (await matches(normalized, hash)) || (normalized !== password && (await matches(password, hash)));
}
