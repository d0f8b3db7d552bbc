const MIN_CODE = 100_000;
const CODE_RANGE = 900_000; // 100000..999999
// The largest multiple of CODE_RANGE below 2^32: draws at or above it are redrawn, so every code is
// equally likely (a plain `% CODE_RANGE` would favour the low codes).
const UNBIASED_LIMIT = Math.floor(2 ** 32 / CODE_RANGE) * CODE_RANGE;

/** Lifetime of a verification code. */
export const CODE_TTL_MS = 15 * 60 * 1000;
/** Wrong guesses after which the current code is void. */
export const MAX_CODE_ATTEMPTS = 5;

/** A 6-digit verification code, uniform over 100000..999999. */
export function generateVerificationCode(): string {
  const draw = new Uint32Array(1);
  for (;;) {
    crypto.getRandomValues(draw);
    const value = draw[0]!;
    if (value < UNBIASED_LIMIT) return String(MIN_CODE + (value % CODE_RANGE));
  }
}

/** Compares a submitted code with the stored one in time that does not depend on where they differ. */
export function codesMatch(submitted: string, stored: string): boolean {
  const encoder = new TextEncoder();
  const a = encoder.encode(submitted);
  const b = encoder.encode(stored);
  // timingSafeEqual needs equal lengths; a length mismatch is no secret (codes have a fixed length).
  if (a.byteLength !== b.byteLength) return false;
  return crypto.subtle.timingSafeEqual(a, b);
}

/** The parts of an account that decide whether its current code can still be used. */
export interface CodeState {
  verificationToken: string | null;
  tokenExpiry: number | null;
  failedCodeAttempts: number;
}

/** A code that exists, has not expired and has not been voided by wrong guesses. */
export function codeUsable(state: CodeState, now: number): state is CodeState & { verificationToken: string } {
  return (
    state.verificationToken !== null &&
    state.tokenExpiry !== null &&
    state.tokenExpiry > now &&
    state.failedCodeAttempts < MAX_CODE_ATTEMPTS
  );
}
