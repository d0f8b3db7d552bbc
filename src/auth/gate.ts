import type { BatchItem } from "drizzle-orm/batch";
import type { Context } from "hono";
import { ConfigError } from "../config";
import { mfaChallenges } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import { base64url } from "../lib/encoding";
import { MINUTE, SECOND } from "../lib/units";
import type { AppEnv } from "../types";
import { issueDeviceToken } from "./devices";
import { AuthMessage } from "./messages";
import { createSession, sessionTokens, shortUserAgent } from "./session-store";
import type { LoginJson, MfaChallengeJson } from "./shapes";

/**
 * The gate: every way into a session passes `passFirstFactor` (today the password login; a future passkey
 * or e-mail-code login must too), which opens the session only for an account without an active second
 * factor, and otherwise answers a challenge (`mfa_token`) that only POST /auth/mfa/verify (mfa.ts) turns
 * into a session, through `openSession`. The reset flow and an e-mail change create no session and leave
 * the factor as it is; a refresh only continues a session that passed the gate.
 */

export function jwtSecretOf(c: Context<AppEnv>): string {
  const secret = c.var.config.jwtSecret;
  if (!secret) throw new ConfigError("JWT_SECRET_KEY is not set; cannot sign tokens");
  return secret;
}

/**
 * The one way a login whose password has been checked becomes a session (a second factor, where an
 * account has one, ends here once it is verified): creates the session, only while the account still has
 * the password hash that was checked, with `alongside` (what the check's claim releases) in the same
 * transaction, and answers with the tokens and the device's token (renewed for the device it came from,
 * or a new device's), bound to that password hash. Nothing is stored for the device token (see devices.ts).
 */
export async function openSession(
  c: Context<AppEnv>,
  account: { id: number; email: string; checkedHash: string },
  deviceId: string | undefined,
  alongside: BatchItem<"sqlite">[] = [],
) {
  const { db, log } = c.var;
  const now = Date.now();
  const secret = jwtSecretOf(c);
  const session = createSession(db, account.id, account.checkedHash, shortUserAgent(c.req.header("User-Agent")), now);
  const [created] = await db.batch([session.query, ...alongside]);
  // The password was reset or changed, or the account deleted, while bcrypt ran: the password checked
  // is no longer the account's.
  if (created.length === 0) return c.text(AuthMessage.invalidCredentials, 401);
  log.info("session_created", { userId: account.id, sessionId: session.id });
  const [tokens, deviceToken] = await Promise.all([
    sessionTokens({ userId: account.id, sessionId: session.id }, 0, secret, log),
    issueDeviceToken(secret, account.email, account.checkedHash, now, deviceId),
  ]);
  const answer: LoginJson = { ...tokens, device_token: deviceToken };
  return c.json(answer, 200);
}

export const MFA_TOKEN_TTL_MS = 5 * MINUTE;
export const MFA_TOKEN_TRIES = 5;

/** An account as a checked first factor (the password) leaves it. */
export interface FirstFactor {
  id: number;
  email: string;
  checkedHash: string;
  hasFactor: boolean;
}

/**
 * The gate. Without a second factor: the session, as openSession makes it. With one: a challenge stored
 * (its token as SHA-256, with the login's device and checked password hash), in one transaction with
 * `alongside` (the first factor's claim given back: a right password ends its login attempt, second
 * factor pending or not).
 */
export async function passFirstFactor(c: Context<AppEnv>, account: FirstFactor, deviceId: string | undefined, alongside: BatchItem<"sqlite">[]) {
  if (!account.hasFactor) return openSession(c, account, deviceId, alongside);
  const { db, log } = c.var;
  const token = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const now = Date.now();
  await db.batch([
    db.insert(mfaChallenges).values({
      tokenHash: await sha256Hex(token),
      userId: account.id,
      checkedHash: account.checkedHash,
      deviceId: deviceId ?? null,
      expiresAt: now + MFA_TOKEN_TTL_MS,
    }),
    ...alongside,
  ]);
  log.info("mfa_challenge_created", { userId: account.id });
  const answer: MfaChallengeJson = { mfa_required: true, mfa_token: token, expires_in: MFA_TOKEN_TTL_MS / SECOND };
  return c.json(answer, 200);
}

