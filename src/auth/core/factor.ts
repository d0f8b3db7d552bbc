import { and, eq, gt, lt, ne, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Config } from "../../config";
import { mfaFactors, mfaRecoveryCodes, users } from "../schema";
import { open, seal, sealedUnder } from "../../lib/secret-box";
import { matchingStep } from "../../lib/totp";
import type { Database } from "../../types";
import { claimWindowSql, windowWait } from "../limits/windows";
import { WRONG_CODES_PER_HOUR } from "../policy";

/**
 * An account's second factor (today TOTP, RFC 6238), wherever it is read or checked: the login's second
 * step, the step-up of sensitive changes, /auth/me and the factor's own management. A code is accepted
 * once per time step per account, ever, decided by one conditional write (claimStep), never by a value
 * read before it. See docs/mfa.md.
 */

/**
 * A second factor as an account holds it: its kind, its state, its secret sealed at rest, and the last step it
 * accepted.
 */
export type Factor = { kind: "totp"; status: "pending" | "active"; sealedSecret: string; lastUsedStep: number };

/** What any query over `users` selects to know the account's factor (see factorOf). */
export const factorFields = {
  totpStatus: sql<Factor["status"] | null>`(SELECT ${mfaFactors.status} FROM ${mfaFactors} WHERE ${ofTotp(users.id)})`,
  totpSecret: sql<string | null>`(SELECT ${mfaFactors.sealedSecret} FROM ${mfaFactors} WHERE ${ofTotp(users.id)})`,
  totpLastStep: sql<number | null>`(SELECT ${mfaFactors.lastUsedStep} FROM ${mfaFactors} WHERE ${ofTotp(users.id)})`,
  recoveryCodes: sql<number>`(SELECT count(*) FROM ${mfaRecoveryCodes} WHERE ${mfaRecoveryCodes.userId} = ${users.id})`,
};

export type FactorRow = { totpStatus: Factor["status"] | null; totpSecret: string | null; totpLastStep: number | null };

/** The account's factor from the row `factorFields` read: undefined when it has none. */
export function factorOf(row: FactorRow): Factor | undefined {
  if (!row.totpStatus || row.totpSecret === null) return undefined;
  return { kind: "totp", status: row.totpStatus, sealedSecret: row.totpSecret, lastUsedStep: row.totpLastStep ?? 0 };
}

/** Whether the account has a factor in use: only then do a sign-in and a step-up ask for it. */
export function isActive(factor: Factor | undefined): factor is Factor & { status: "active" } {
  return factor?.status === "active";
}

function ofTotp(userId: number | SQL | typeof users.id): SQL {
  return and(eq(mfaFactors.userId, userId), eq(mfaFactors.kind, "totp"))!;
}

/**
 * Claims the time step `step` for the factor as it was read: one conditional UPDATE that succeeds only
 * while no code of that step or a later one has been accepted (`last_used_step < step`), and the factor
 * is still in the state read. A pending factor's first code also makes it active, only while it is
 * still the secret that was enrolled (a new enrolment replaces a pending secret).
 */
async function claimStep(
  db: Database,
  userId: number,
  factor: Factor,
  step: number,
  alongside: BatchItem<"sqlite">[],
): Promise<boolean> {
  const stillAsRead =
    factor.status === "pending"
      ? and(eq(mfaFactors.status, "pending"), eq(mfaFactors.sealedSecret, factor.sealedSecret))
      : eq(mfaFactors.status, "active");
  const [[claimed]] = await db.batch([
    db
      .update(mfaFactors)
      .set({ status: "active", lastUsedStep: step })
      .where(and(ofTotp(userId), stillAsRead, lt(mfaFactors.lastUsedStep, step)))
      .returning({ userId: mfaFactors.userId }),
    ...alongside,
  ]);
  return claimed !== undefined;
}

/** What a code did: accepted, wrong, or right but of a step already used (a code is good once). */
export type CodeOutcome = "accepted" | "wrong" | "reused";

/**
 * Accepts a code of the factor: the step it matches (±1 for clock drift) is claimed (claimStep), so a
 * code, and any code of an earlier step, is never accepted twice, not even by concurrent requests. A
 * pending factor becomes active with its first code; `alongside` goes into the claim's batch, right after it
 * (the event of a factor turned on, recorded only if the claim was made).
 */
export async function acceptCode(
  db: Database,
  config: Pick<Config, "mfaKeys">,
  userId: number,
  factor: Factor,
  code: string,
  now: number,
  alongside: BatchItem<"sqlite">[] = [],
): Promise<CodeOutcome> {
  const secret = await open(factor.sealedSecret, config.mfaKeys);
  const step = secret && (await matchingStep(secret, code.trim(), now));
  if (!secret || step === undefined) return "wrong";
  if (step <= factor.lastUsedStep || !(await claimStep(db, userId, factor, step, alongside))) return "reused";
  // After a key rotation, each secret is sealed again under the current key the first time it is used.
  const current = config.mfaKeys[0]!;
  if (!(await sealedUnder(factor.sealedSecret, current))) {
    await db
      .update(mfaFactors)
      .set({ sealedSecret: await seal(secret, current) })
      .where(and(ofTotp(userId), eq(mfaFactors.sealedSecret, factor.sealedSecret)));
  }
  return "accepted";
}

/**
 * Claims one try at the account's active factor in its hourly window of wrong codes, before the code is
 * checked (one conditional UPDATE): the window as the claim left it, or how long it is full.
 */
export async function claimCodeTry(
  db: Database,
  userId: number,
  now: number,
): Promise<{ windowStart: number; count: number } | { waitMs: number }> {
  const window = claimWindowSql(mfaFactors.wrongWindowStart, mfaFactors.wrongInWindow, WRONG_CODES_PER_HOUR, now);
  const active = and(ofTotp(userId), eq(mfaFactors.status, "active"));
  const [[claimed], [state]] = await db.batch([
    db
      .update(mfaFactors)
      .set({ wrongWindowStart: window.start, wrongInWindow: window.count })
      .where(and(active, window.hasRoom))
      .returning({ windowStart: mfaFactors.wrongWindowStart, count: mfaFactors.wrongInWindow }),
    db.select({ start: mfaFactors.wrongWindowStart, count: mfaFactors.wrongInWindow }).from(mfaFactors).where(active),
  ]);
  return claimed ?? { waitMs: state ? Math.max(windowWait(state, WRONG_CODES_PER_HOUR, now), 1) : 1 };
}

/** Gives back a try that was not a wrong code, in the window it was claimed in. */
export async function giveBackCodeTry(db: Database, userId: number, windowStart: number): Promise<void> {
  await db
    .update(mfaFactors)
    .set({ wrongInWindow: sql`max(${mfaFactors.wrongInWindow} - 1, 0)` })
    .where(and(ofTotp(userId), eq(mfaFactors.wrongWindowStart, windowStart)));
}

/** True for the one request that may tell the owner the window `windowStart` is full: one notice per window. */
export async function claimFullWindowNotice(db: Database, userId: number, windowStart: number): Promise<boolean> {
  const [claimed] = await db
    .update(mfaFactors)
    .set({ noticedWindow: windowStart })
    .where(and(ofTotp(userId), eq(mfaFactors.wrongWindowStart, windowStart), ne(mfaFactors.noticedWindow, windowStart)))
    .returning({ userId: mfaFactors.userId });
  return claimed !== undefined;
}

/**
 * Enrols a new pending TOTP factor: replaces a pending one, never an active one (the upsert's condition
 * decides, not a read). False when the account's factor is already active.
 */
export async function enrolPending(db: Database, userId: number, sealedSecret: string, now: number): Promise<boolean> {
  const [stored] = await db
    .insert(mfaFactors)
    .values({ userId, kind: "totp", sealedSecret, status: "pending", createdAt: now })
    .onConflictDoUpdate({
      target: [mfaFactors.userId, mfaFactors.kind],
      set: { sealedSecret, lastUsedStep: 0, createdAt: now },
      setWhere: eq(mfaFactors.status, "pending"),
    })
    .returning({ userId: mfaFactors.userId });
  return stored !== undefined;
}

/**
 * The statements that remove the account's factors enrolled after `since` (an e-mail change being undone:
 * whoever made it may have added them), and then its recovery codes if no factor is left, each only while
 * `condition` holds: for a batch.
 */
export function removeFactorsAddedSince(db: Database, userId: number | SQL, since: number | SQL, condition: SQL) {
  return [
    db.delete(mfaFactors).where(and(eq(mfaFactors.userId, userId), gt(mfaFactors.createdAt, since), condition)),
    db
      .delete(mfaRecoveryCodes)
      .where(
        and(
          eq(mfaRecoveryCodes.userId, userId),
          sql`NOT EXISTS (SELECT 1 FROM ${mfaFactors} WHERE ${eq(mfaFactors.userId, userId)})`,
          condition,
        ),
      ),
  ] as const;
}

/** The statement that removes every factor of the account, and its recovery codes: for a batch. */
export function removeFactors(db: Database, userId: number) {
  return [
    db.delete(mfaFactors).where(eq(mfaFactors.userId, userId)),
    db.delete(mfaRecoveryCodes).where(eq(mfaRecoveryCodes.userId, userId)),
  ] as const;
}

/** The account's address and factor, by id: what the login's second step checks the code against. */
export async function accountFactor(
  db: Database,
  userId: number,
): Promise<{ email: string; factor: Factor | undefined } | undefined> {
  const [row] = await db
    .select({ email: users.email, ...factorFields })
    .from(users)
    .where(eq(users.id, userId));
  return row && { email: row.email, factor: factorOf(row) };
}
