import type { BatchItem } from "drizzle-orm/batch";
import type { Context } from "hono";
import { ConfigError } from "../../config";
import { ACCESS_TOKEN_TTL_SECONDS, signAccessToken, type AccessClaims } from "../../lib/access-token";
import type { Logger } from "../../lib/log";
import { refreshTokenFor } from "../../lib/refresh-token";
import { SECOND } from "../../lib/units";
import type { AppEnv } from "../../types";
import { AuthMessage } from "../messages";
import { MFA_TOKEN_TTL_MS, newChallenge } from "../mfa/challenge";
import type { LoginJson, MfaChallengeJson, TokensJson } from "../shapes";
import { issueDeviceToken } from "./devices";
import { createSession, shortUserAgent } from "./store";

/**
 * The gate every way into a session passes. A sign-in method checks what the user presented (a password
 * today; a passkey or a provider's token tomorrow) and hands the gate a *proof of sign-in*: the account,
 * the sign-in epoch it read, how the user proved themselves, and whether a second factor is still due.
 * The gate opens the session, or, while a factor is due, answers a challenge (`mfa_token`) that only
 * POST /auth/mfa/verify turns into a session, through this gate again. The session records the method.
 * The reset flow and an e-mail change create no session; a refresh only continues one that passed here.
 */

/**
 * How a user proved themselves, as RFC 8176 `amr` values: `pwd` a password, `otp` a TOTP code, `mfa` two
 * factors; `rec` (ours: RFC 8176 has no value for it) a recovery code; `fed` a sign-in through an identity
 * provider (auth/oauth/); `hwk`/`swk` are kept for passkeys.
 */
const AMR_VALUES = ["pwd", "otp", "rec", "mfa", "hwk", "swk", "user", "fed"] as const;
export type Amr = (typeof AMR_VALUES)[number];

/** The account a proof is for, with the sign-in epoch read with the proof. */
export interface SignInAccount {
  id: number;
  email: string;
  signInEpoch: number;
}

export interface SignInProof {
  account: SignInAccount;
  amr: readonly Amr[];
  /** The device token's device the sign-in came from, if it sent a valid one. */
  deviceId: string | undefined;
  /** True while the account has a second factor in use that this proof has not covered. */
  factorDue: boolean;
  /** The provider (OAUTH_PROVIDERS name) of a social sign-in (`amr` has `fed`), recorded on the session. */
  provider?: string;
}

export function jwtSecretOf(c: Context<AppEnv>): string {
  const secret = c.var.config.jwtSecret;
  if (!secret) throw new ConfigError("JWT_SECRET_KEY is not set; cannot sign tokens");
  return secret;
}

/** The answer of a login and of a refresh: the spec's `token`, and the refresh token beside it. */
export async function sessionTokens(
  caller: AccessClaims,
  generation: number,
  secret: string,
  log: Logger,
): Promise<TokensJson> {
  const [token, refreshToken] = await Promise.all([
    signAccessToken(caller, secret, log),
    refreshTokenFor({ sessionId: caller.sessionId, generation }, secret),
  ]);
  return { token, refresh_token: refreshToken, expires_in: ACCESS_TOKEN_TTL_SECONDS };
}

/**
 * The gate: the session (openSession), or while a second factor is due a challenge stored (its token as
 * SHA-256, with what the session will need), each in one transaction with `alongside` (what the method's
 * claim releases: a right password ends its login attempt, second factor pending or not).
 */
export async function passGate(c: Context<AppEnv>, proof: SignInProof, alongside: BatchItem<"sqlite">[] = []) {
  if (!proof.factorDue) return openSession(c, proof, alongside);
  const { db, log } = c.var;
  const { account, amr, deviceId, provider } = proof;
  const challenged = {
    userId: account.id,
    signInEpoch: account.signInEpoch,
    amr: amr.join(" "),
    deviceId: deviceId ?? null,
    provider: provider ?? null,
  };
  const challenge = await newChallenge(db, challenged, Date.now());
  await db.batch([challenge.statement, ...alongside]);
  log.info("mfa_challenge_created", { userId: account.id });
  const answer: MfaChallengeJson = {
    mfa_required: true,
    mfa_token: challenge.token,
    expires_in: MFA_TOKEN_TTL_MS / SECOND,
  };
  return c.json(answer, 200);
}

/**
 * Opens the session of a proof with nothing more due (the second step of a sign-in calls it directly,
 * its factor proven; every other method goes through passGate): only while the account's sign-in epoch is still the
 * proof's, with `alongside` in the same transaction; answers the tokens and the device's token (renewed
 * for the device it came from, or a new device's). Nothing is stored for the device token (devices.ts).
 */
export async function openSession(
  c: Context<AppEnv>,
  { account, amr, deviceId, provider }: Omit<SignInProof, "factorDue">,
  alongside: BatchItem<"sqlite">[],
) {
  const { db, log } = c.var;
  const now = Date.now();
  const secret = jwtSecretOf(c);
  const userAgent = shortUserAgent(c.req.header("User-Agent"));
  const session = createSession(
    db,
    { userId: account.id, signInEpoch: account.signInEpoch, amr: amr.join(" "), provider: provider ?? null, userAgent },
    now,
  );
  const [created] = await db.batch([session.query, ...alongside]);
  // The password was reset or changed, or the account deleted, while the proof was checked.
  if (created.length === 0) return c.text(AuthMessage.invalidCredentials, 401);
  log.info("session_created", { userId: account.id, sessionId: session.id });
  const [tokens, deviceToken] = await Promise.all([
    sessionTokens({ userId: account.id, sessionId: session.id }, 0, secret, log),
    issueDeviceToken(secret, account, now, deviceId),
  ]);
  const answer: LoginJson = { ...tokens, device_token: deviceToken };
  return c.json(answer, 200);
}

/** The `amr` values a session or challenge stored (space-separated), as the gate takes them. */
export function parseAmr(stored: string): Amr[] {
  return stored.split(" ").filter((value): value is Amr => (AMR_VALUES as readonly string[]).includes(value));
}
