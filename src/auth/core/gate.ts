import { and, eq } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Context } from "hono";
import type { EventData } from "../../audit/events";
import { batchOf } from "../../db/client";
import { describeError } from "../../lib/log";
import { SECOND } from "../../lib/units";
import type { AppEnv } from "../../types";
import { jwtSecretOf } from "../caller";
import { AuthMessage } from "../messages";
import { MFA_TOKEN_TTL_MS } from "../policy";
import { users } from "../schema";
import type { LoginJson, MfaChallengeJson } from "../shapes";
import { banOf, isSuspended } from "./accounts";
import { issueDeviceToken } from "./devices";
import { newChallenge } from "./pending";
import { createSession, sessionExists, sessionTokens, shortUserAgent } from "./sessions";

/**
 * The gate every way into a session passes, and its one door, `signIn`. A sign-in method checks what the user
 * presented (a password, a passkey, a provider's token, the second step's code) and hands the gate a *proof
 * of sign-in*: the account, the sign-in epoch it read, how the user proved themselves, the method's detail,
 * and whether a second factor is still due. The gate opens the session, or, while a factor is due, answers a
 * challenge (`mfa_token`) that only POST /auth/mfa/verify turns into a session, through this door again. The
 * session records the method. The reset flow and an e-mail change create no session; a refresh only
 * continues one that passed here.
 */

/**
 * How a user proved themselves, as RFC 8176 `amr` values: `pwd` a password, `otp` a TOTP code, `mfa` two
 * factors; `rec` (ours: RFC 8176 has no value for it) a recovery code; `fed` a sign-in through an identity
 * provider (auth/oauth/); `hwk`/`swk` a passkey bound to its device or synced.
 */
const AMR_VALUES = ["pwd", "otp", "rec", "mfa", "hwk", "swk", "user", "fed"] as const;
export type Amr = (typeof AMR_VALUES)[number];

/** The account a proof is for, with the sign-in epoch read with the proof. */
export interface SignInAccount {
  id: number;
  email: string;
  signInEpoch: number;
}

/**
 * What a method knows of a sign-in beyond `amr`, kept with the session (stored once, as JSON): the provider
 * of a social sign-in (`amr` has `fed`). A new method adds its field here, not a column.
 */
export interface SignInDetail {
  provider?: string;
}

export interface SignInProof {
  account: SignInAccount;
  amr: readonly Amr[];
  /** The device token's device the sign-in came from, if it sent a valid one. */
  deviceId: string | undefined;
  /** True while the account has a second factor in use that this proof has not covered. */
  factorDue: boolean;
  detail?: SignInDetail;
}

/** A proof that leaves nothing due: two factors proven together (a passkey), or the second step's. */
export type CompleteProof = SignInProof & { factorDue: false };

/** The detail as stored with a session or a pending sign-in: JSON, or null when there is none. */
function storedDetail(detail: SignInDetail | undefined): string | null {
  return detail && Object.keys(detail).length > 0 ? JSON.stringify(detail) : null;
}

/** The detail a session or pending sign-in stored. */
export function readDetail(stored: string | null): SignInDetail {
  if (stored === null) return {};
  const parsed: unknown = JSON.parse(stored);
  const provider = typeof parsed === "object" && parsed !== null && "provider" in parsed ? parsed.provider : undefined;
  return typeof provider === "string" ? { provider } : {};
}

/**
 * The one door into a session. A proof with nothing due opens the session (answers a login's tokens, or 401
 * when the account's password changed or the account went while the proof was checked); one that may leave
 * a second factor due answers, while it does, a challenge instead (stored as SHA-256 with what the session
 * will need). Either way in one transaction with `alongside` (what the method's claim releases: a right
 * password ends its login attempt, second factor pending or not).
 */
export async function signIn(
  c: Context<AppEnv>,
  proof: CompleteProof,
  alongside?: BatchItem<"sqlite">[],
): ReturnType<typeof openSession>;
export async function signIn(
  c: Context<AppEnv>,
  proof: SignInProof,
  alongside?: BatchItem<"sqlite">[],
): Promise<Awaited<ReturnType<typeof openSession>> | Awaited<ReturnType<typeof challenge>>>;
export async function signIn(c: Context<AppEnv>, proof: SignInProof, alongside: BatchItem<"sqlite">[] = []) {
  return proof.factorDue ? challenge(c, proof, alongside) : openSession(c, proof, alongside);
}

/**
 * Records a failed sign-in of account `userId` (at most FAILED_SIGN_INS_PER_HOUR events an hour, audit/writer.ts),
 * after the answer: a write the answer waited for would make a wrong password of an account slower than one of an
 * unknown address, and tell them apart.
 */
export function recordFailedSignIn(c: Context<AppEnv>, userId: number, data: EventData): void {
  const { db, log, audit } = c.var;
  c.executionCtx.waitUntil(
    batchOf(db, audit.failedSignIn(userId, data)).then(
      () => undefined,
      (err: unknown) => log.warn("audit_write_failed", { type: "user.sign_in_failed", userId, ...describeError(err) }),
    ),
  );
}

/** The refusal of a suspended account (an operator's ban, admin API): 403, and a failed sign-in in its audit trail. */
function suspended(c: Context<AppEnv>, proof: SignInProof) {
  const { account, amr } = proof;
  c.var.log.warn("sign_in_suspended", { userId: account.id });
  recordFailedSignIn(c, account.id, { reason: "suspended", amr: [...amr] });
  return c.text(AuthMessage.accountSuspended, 403);
}

/**
 * The challenge of a proof whose second factor is due: its `mfa_token`, stored with what the session will need. A
 * suspended account gets none (what decides is the session's own statement, openSession, which this one leads to).
 */
async function challenge(c: Context<AppEnv>, proof: SignInProof, alongside: BatchItem<"sqlite">[]) {
  const { db, log } = c.var;
  const { account, amr, deviceId, detail } = proof;
  const challenged = {
    userId: account.id,
    signInEpoch: account.signInEpoch,
    amr: amr.join(" "),
    deviceId: deviceId ?? null,
    detail: storedDetail(detail),
  };
  const now = Date.now();
  const pending = await newChallenge(db, challenged, now);
  const [[ban]] = await db.batch([banOf(db, account.id), pending.statement, ...alongside]);
  if (isSuspended(ban?.bannedUntil, now)) return suspended(c, proof);
  log.info("mfa_challenge_created", { userId: account.id });
  const answer: MfaChallengeJson = {
    mfa_required: true,
    mfa_token: pending.token,
    expires_in: MFA_TOKEN_TTL_MS / SECOND,
  };
  return c.json(answer, 200);
}

/**
 * Opens the session of a proof with nothing more due: only while the account's sign-in epoch is still the
 * proof's and the account is not suspended, with `alongside`, the account's last sign-in and the `user.signed_in`
 * event in the same transaction; answers the tokens and the device's token (renewed for the device it came from,
 * or a new device's). Nothing is stored for the device token (devices.ts).
 */
async function openSession(c: Context<AppEnv>, proof: SignInProof, alongside: BatchItem<"sqlite">[]) {
  const { db, log } = c.var;
  const { account, amr, deviceId, detail } = proof;
  const now = Date.now();
  const secret = jwtSecretOf(c);
  const userAgent = shortUserAgent(c.req.header("User-Agent"));
  const session = createSession(
    db,
    {
      userId: account.id,
      signInEpoch: account.signInEpoch,
      amr: amr.join(" "),
      detail: storedDetail(detail),
      userAgent,
    },
    now,
  );
  const opened = sessionExists(session.id);
  const signedIn = c.var.audit.record(
    {
      type: "user.signed_in",
      userId: account.id,
      at: now,
      data: { amr: [...amr], session_id: session.id, ...(detail?.provider && { provider: detail.provider }) },
    },
    opened,
  );
  const [created, [ban]] = await db.batch([
    session.query,
    banOf(db, account.id),
    db
      .update(users)
      .set({ lastSignInAt: now })
      .where(and(eq(users.id, account.id), opened)),
    ...signedIn,
    ...alongside,
  ]);
  if (created.length === 0) {
    // Suspended by an operator; or the password was reset or changed, or the account deleted, while the proof was checked.
    return isSuspended(ban?.bannedUntil, now) ? suspended(c, proof) : c.text(AuthMessage.invalidCredentials, 401);
  }
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
