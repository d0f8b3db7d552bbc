import { and, asc, eq, gt, lt, sql } from "drizzle-orm";
import { passkeyChallenges, passkeys, users } from "../schema";
import type { AccessClaims } from "../../lib/access-token";
import { randomId } from "../../lib/crypto";
import type { AuditTrail } from "../../audit/events";
import type { Database } from "../../types";
import { liveSession, sessionCheck } from "../caller";
import { randomBase64url, type NewCredential, type RegisteringAccount, type StoredCredential } from "./webauthn";
import { MAX_PASSKEYS, PASSKEY_CHALLENGE_TTL_MS } from "../policy";

/** The SQL of passkeys: their challenges, the account's user handle, the passkeys themselves. */

const passkeyFields = {
  id: passkeys.id,
  name: passkeys.name,
  createdAt: passkeys.createdAt,
  lastUsedAt: passkeys.lastUsedAt,
  backedUp: passkeys.backedUp,
};
export type PasskeyRow = { id: string; name: string; createdAt: number; lastUsedAt: number | null; backedUp: boolean };

/** A challenge stored for `userId` (a registration) only while the account exists; for nobody (a sign-in) always. */
function storeChallenge(
  db: Database,
  challenge: string,
  kind: "registration" | "authentication",
  userId: number | null,
  now: number,
) {
  const expiresAt = now + PASSKEY_CHALLENGE_TTL_MS;
  if (userId === null) return db.insert(passkeyChallenges).values({ challenge, kind, userId, expiresAt });
  return db.insert(passkeyChallenges).select(
    db
      .select({
        challenge: sql<string>`${challenge}`.as("challenge"),
        kind: sql<"registration">`${kind}`.as("kind"),
        userId: users.id,
        expiresAt: sql<number>`${expiresAt}`.as("expires_at"),
      })
      .from(users)
      .where(eq(users.id, userId)),
  );
}

/**
 * The start of a registration, in one transaction: the account's user handle (set by the first
 * registration and kept: `coalesce` keeps the one a concurrent registration set), its passkeys to exclude,
 * and the challenge. Undefined when the account is gone.
 */
export async function startRegistration(
  db: Database,
  userId: number,
  challenge: string,
  now: number,
): Promise<Omit<RegisteringAccount, "email"> | undefined> {
  const [[account], exclude] = await db.batch([
    db
      .update(users)
      .set({ webauthnHandle: sql`coalesce(${users.webauthnHandle}, ${randomBase64url()})` })
      .where(eq(users.id, userId))
      .returning({ handle: users.webauthnHandle }),
    db
      .select({ credentialId: passkeys.credentialId, transports: passkeys.transports })
      .from(passkeys)
      .where(eq(passkeys.userId, userId)),
    storeChallenge(db, challenge, "registration", userId, now),
  ]);
  if (!account?.handle) return undefined;
  return {
    handle: account.handle,
    exclude: exclude.map(({ credentialId, transports }) => ({
      credentialId,
      transports: transports.split(",").filter(Boolean),
    })),
  };
}

/** The statement that stores a sign-in challenge, which belongs to nobody until a passkey answers it. */
export const storeSignInChallenge = (db: Database, challenge: string, now: number) =>
  storeChallenge(db, challenge, "authentication", null, now);

/**
 * Claims the caller's live registration challenge with one DELETE … RETURNING, while the caller's session is
 * live; reads the caller's address alongside. `live` is false when the session is not.
 */
export async function claimRegistrationChallenge(db: Database, caller: AccessClaims, challenge: string, now: number) {
  const live = liveSession(caller, now);
  const [claimed, [account]] = await db.batch([
    db
      .delete(passkeyChallenges)
      .where(
        and(
          eq(passkeyChallenges.challenge, challenge),
          eq(passkeyChallenges.kind, "registration"),
          eq(passkeyChallenges.userId, caller.userId),
          gt(passkeyChallenges.expiresAt, now),
          live,
        ),
      )
      .returning({ challenge: passkeyChallenges.challenge }),
    db
      .select({ email: users.email })
      .from(users)
      .where(and(eq(users.id, caller.userId), live)),
  ]);
  return { live: account !== undefined, email: account?.email ?? "", claimed: claimed.length > 0 };
}

/**
 * Stores a new passkey of the caller in one INSERT … SELECT: only while the caller's session is live, the
 * account has fewer than MAX_PASSKEYS and no account has the credential (so the unique index is never hit).
 * Reads alongside why nothing was stored, if it was not; records its event if it was.
 */
export async function addPasskey(
  db: Database,
  audit: AuditTrail,
  caller: AccessClaims,
  credential: NewCredential,
  name: string,
  now: number,
) {
  const id = randomId();
  const room = sql`(SELECT count(*) FROM ${passkeys} WHERE ${passkeys.userId} = ${users.id}) < ${MAX_PASSKEYS}`;
  const unknown = sql`NOT EXISTS (SELECT 1 FROM ${passkeys} WHERE ${passkeys.credentialId} = ${credential.credentialId})`;
  const [added, [taken], [live]] = await db.batch([
    db
      .insert(passkeys)
      .select(
        // Every column, in the table's order (drizzle's rule for INSERT … SELECT).
        db
          .select({
            id: sql<string>`${id}`.as("id"),
            userId: users.id,
            credentialId: sql<string>`${credential.credentialId}`.as("credential_id"),
            publicKey: sql<string>`${credential.publicKey}`.as("public_key"),
            counter: sql<number>`${credential.counter}`.as("counter"),
            backedUp: sql<boolean>`${credential.backedUp ? 1 : 0}`.as("backed_up"),
            transports: sql<string>`${credential.transports.join(",")}`.as("transports"),
            name: sql<string>`${name}`.as("name"),
            createdAt: sql<number>`${now}`.as("created_at"),
            lastUsedAt: sql<number | null>`NULL`.as("last_used_at"),
          })
          .from(users)
          .where(and(eq(users.id, caller.userId), liveSession(caller, now), room, unknown)),
      )
      .returning(passkeyFields),
    db.select({ id: passkeys.id }).from(passkeys).where(eq(passkeys.credentialId, credential.credentialId)),
    sessionCheck(db, caller, now),
    ...audit.record(
      { type: "passkey.added", userId: caller.userId, data: { passkey_id: id, name } },
      sql`EXISTS (SELECT 1 FROM ${passkeys} WHERE ${passkeys.id} = ${id})`,
    ),
  ]);
  const [row] = added;
  if (row) return { added: row };
  return { refused: !live ? ("session" as const) : taken ? ("taken" as const) : ("full" as const) };
}

/** The caller's passkeys, oldest first; undefined when the caller's session is not live. */
export async function listPasskeys(db: Database, caller: AccessClaims, now: number): Promise<PasskeyRow[] | undefined> {
  const [[live], rows] = await db.batch([
    sessionCheck(db, caller, now),
    db
      .select(passkeyFields)
      .from(passkeys)
      .where(eq(passkeys.userId, caller.userId))
      .orderBy(asc(passkeys.createdAt), asc(passkeys.id)),
  ]);
  return live ? rows : undefined;
}

/** Renames one of the caller's passkeys, while the caller's session is live. */
export async function renamePasskey(db: Database, caller: AccessClaims, id: string, name: string, now: number) {
  const [[live], [renamed]] = await db.batch([
    sessionCheck(db, caller, now),
    db
      .update(passkeys)
      .set({ name })
      .where(and(eq(passkeys.id, id), eq(passkeys.userId, caller.userId), liveSession(caller, now)))
      .returning(passkeyFields),
  ]);
  return { live: live !== undefined, renamed };
}

/**
 * Deletes one of the caller's passkeys (the step-up has just checked the session), with its event: its name, or
 * undefined for none of theirs.
 */
export async function removePasskey(
  db: Database,
  audit: AuditTrail,
  caller: AccessClaims,
  id: string,
  now: number,
): Promise<string | undefined> {
  const theirs = and(eq(passkeys.id, id), eq(passkeys.userId, caller.userId), liveSession(caller, now));
  // Read, and recorded, before the passkey goes, under the very condition of its deletion: one transaction.
  const [[found]] = await db.batch([
    db.select({ name: passkeys.name }).from(passkeys).where(theirs),
    ...audit.record(
      {
        type: "passkey.removed",
        userId: caller.userId,
        data: { passkey_id: id, name: sql`(SELECT ${passkeys.name} FROM ${passkeys} WHERE ${theirs})` },
      },
      sql`EXISTS (SELECT 1 FROM ${passkeys} WHERE ${theirs})`,
    ),
    db.delete(passkeys).where(theirs),
  ]);
  return found?.name;
}

/** The passkey a sign-in presents, with its account. */
export type SigningPasskey = StoredCredential & {
  id: string;
  userId: number;
  email: string;
  signInEpoch: number;
  handle: string | null;
};

/**
 * A sign-in's first write: claims the sign-in challenge with one DELETE … RETURNING (whatever the rest
 * turns out to be, it is used up) and reads the passkey the assertion names, with its account.
 */
export async function claimSignIn(db: Database, challenge: string, credentialId: string, now: number) {
  const [claimed, [passkey]] = await db.batch([
    db
      .delete(passkeyChallenges)
      .where(
        and(
          eq(passkeyChallenges.challenge, challenge),
          eq(passkeyChallenges.kind, "authentication"),
          gt(passkeyChallenges.expiresAt, now),
        ),
      )
      .returning({ challenge: passkeyChallenges.challenge }),
    db
      .select({
        id: passkeys.id,
        credentialId: passkeys.credentialId,
        publicKey: passkeys.publicKey,
        counter: passkeys.counter,
        transports: passkeys.transports,
        // No column name twice (a batch's rows come back keyed by name): the user id is the passkey's.
        userId: passkeys.userId,
        email: users.email,
        signInEpoch: users.signInEpoch,
        handle: users.webauthnHandle,
      })
      .from(passkeys)
      .innerJoin(users, eq(users.id, passkeys.userId))
      .where(eq(passkeys.credentialId, credentialId)),
  ]);
  return { claimed: claimed.length > 0, passkey: passkey satisfies SigningPasskey | undefined };
}

/**
 * Records a good assertion: the counter moves to `counter` only forward (or stays 0 when both are 0), in
 * one conditional UPDATE, so of two assertions carrying the same non-zero counter only one signs in.
 */
export async function recordSignIn(
  db: Database,
  passkeyId: string,
  asserted: { counter: number; backedUp: boolean },
  now: number,
): Promise<boolean> {
  const forward = asserted.counter === 0 ? eq(passkeys.counter, 0) : lt(passkeys.counter, asserted.counter);
  const [used] = await db
    .update(passkeys)
    .set({ counter: asserted.counter, backedUp: asserted.backedUp, lastUsedAt: now })
    .where(and(eq(passkeys.id, passkeyId), forward))
    .returning({ id: passkeys.id });
  return used !== undefined;
}
