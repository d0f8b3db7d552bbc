import { and, eq, gt, lt, sql } from "drizzle-orm";
import { mfaChallenges } from "../schema";
import { sha256Hex } from "../../lib/crypto";
import { base64url } from "../../lib/encoding";
import type { Database } from "../../types";
import { MFA_TOKEN_TRIES, MFA_TOKEN_TTL_MS } from "../policy";

/**
 * A sign-in waiting for its second factor: the `mfa_token` the first step answered (stored as SHA-256),
 * with what the session will need once the factor is verified (the account, its sign-in epoch, how the
 * first proof was made, the device). Each try at it is claimed before its code is looked at; the first
 * success uses it up.
 */

/** What a challenge holds of the sign-in that made it. */
export interface Challenged {
  userId: number;
  signInEpoch: number;
  /** The first proof's `amr` values, space-separated. */
  amr: string;
  deviceId: string | null;
  /** What the method knows beyond `amr`, for the session (gate.ts, SignInDetail), as JSON; null when nothing. */
  detail: string | null;
}

/**
 * A new challenge for `challenged`: the token to answer, and the statement that stores it (batch it with what the first
 * step releases).
 */
export async function newChallenge(db: Database, challenged: Challenged, now: number) {
  const token = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const statement = db
    .insert(mfaChallenges)
    .values({ tokenHash: await sha256Hex(token), ...challenged, expiresAt: now + MFA_TOKEN_TTL_MS });
  return { token, statement };
}

const live = (tokenHash: string, now: number) =>
  and(eq(mfaChallenges.tokenHash, tokenHash), eq(mfaChallenges.used, false), gt(mfaChallenges.expiresAt, now));

/**
 * Claims one try of the challenge before its code is looked at: what it holds, or undefined when it is unknown, used,
 * expired or out of tries.
 */
export async function claimChallengeTry(db: Database, tokenHash: string, now: number): Promise<Challenged | undefined> {
  const [tried] = await db
    .update(mfaChallenges)
    .set({ tries: sql`${mfaChallenges.tries} + 1` })
    .where(and(live(tokenHash, now), lt(mfaChallenges.tries, MFA_TOKEN_TRIES)))
    .returning({
      userId: mfaChallenges.userId,
      signInEpoch: mfaChallenges.signInEpoch,
      amr: mfaChallenges.amr,
      deviceId: mfaChallenges.deviceId,
      detail: mfaChallenges.detail,
    });
  return tried;
}

/** Uses the challenge up: true for the one request that did; a concurrent one that also passed its check gets false. */
export async function useChallenge(db: Database, tokenHash: string, now: number): Promise<boolean> {
  const [used] = await db
    .update(mfaChallenges)
    .set({ used: true })
    .where(live(tokenHash, now))
    .returning({ userId: mfaChallenges.userId });
  return used !== undefined;
}

/** The statement that voids every challenge of the account (the factor was turned off): for a batch. */
export function dropChallenges(db: Database, userId: number) {
  return db.delete(mfaChallenges).where(eq(mfaChallenges.userId, userId));
}
