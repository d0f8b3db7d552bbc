import bcrypt from "bcryptjs";

/** bcrypt reads at most 72 bytes of a password; longer ones are refused rather than silently cut. */
export const MAX_PASSWORD_BYTES = 72;
export const MIN_PASSWORD_CHARS = 8;

export function passwordBytes(password: string): number {
  return new TextEncoder().encode(password).length;
}

export function hashPassword(password: string, cost: number): Promise<string> {
  return bcrypt.hash(password, cost);
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

/**
 * True only when `hash` is present and matches. Always does one full bcrypt comparison, and treats a
 * password longer than bcrypt can read as wrong (its first 72 bytes alone must not unlock an account).
 */
export async function verifyPassword(password: string, hash: string | undefined, cost: number): Promise<boolean> {
  const matches = await bcrypt.compare(password, hash ?? (await dummyHash(cost)));
  return matches && hash !== undefined && passwordBytes(password) <= MAX_PASSWORD_BYTES;
}
