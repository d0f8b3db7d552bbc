import { and, eq, ne, sql, type SQL } from "drizzle-orm";
import { oauthIdentities, oauthLoginCodes, oauthStates, oneTimeCodes, resetRequests, users } from "../schema";
import type { AccessClaims } from "../../lib/access-token";
import { NO_PASSWORD } from "../../lib/password";
import { changedRows, newEventId, type AuditTrail } from "../../audit/events";
import type { Database } from "../../types";
import { liveSession, sessionCheck } from "../caller";
import { newAccount, passwordWrite, reserved } from "../core/accounts";
import { factorFields } from "../core/factor";
import type { SessionEnding } from "../core/sessions";

/**
 * The SQL of social sign-in: the flows' states and login codes (each claimed by one DELETE … RETURNING,
 * so used once whatever follows), the identities linked to accounts, and the accounts a sign-in makes or
 * takes over. See docs/social-sign-in.md.
 */

export type OAuthState = typeof oauthStates.$inferSelect;
export type LoginCode = typeof oauthLoginCodes.$inferSelect;
/** An identity as a sign-in links it: the provider's name, issuer and subject, and the address it showed. */
export type NewIdentity = Omit<typeof oauthIdentities.$inferInsert, "userId">;

export function saveState(db: Database, state: OAuthState) {
  return db.insert(oauthStates).values(state);
}

/** Claims a state: it is gone for every other request, live or not. Undefined when unknown, used or expired. */
export async function claimState(db: Database, stateHash: string, now: number): Promise<OAuthState | undefined> {
  const [state] = await db.delete(oauthStates).where(eq(oauthStates.stateHash, stateHash)).returning();
  return state && state.expiresAt > now ? state : undefined;
}

export function saveLoginCode(db: Database, code: LoginCode) {
  return db.insert(oauthLoginCodes).values(code);
}

/**
 * Claims a login code before its verifier is looked at: spent whatever follows. Undefined when unknown, used or
 * expired.
 */
export async function claimLoginCode(db: Database, codeHash: string, now: number): Promise<LoginCode | undefined> {
  const [code] = await db.delete(oauthLoginCodes).where(eq(oauthLoginCodes.codeHash, codeHash)).returning();
  return code && code.expiresAt > now ? code : undefined;
}

/** What a sign-in needs of an account: its address and sign-in epoch (for the proof), and whether TOTP is on. */
const signInFields = {
  id: users.id,
  email: users.email,
  signInEpoch: users.signInEpoch,
  totpStatus: factorFields.totpStatus,
};
export type SignInAccount = { id: number; email: string; signInEpoch: number; totpStatus: string | null };

export async function accountById(db: Database, userId: number): Promise<SignInAccount | undefined> {
  const [account] = await db.select(signInFields).from(users).where(eq(users.id, userId));
  return account;
}

/** The account an identity (issuer and subject) is linked to, and the address the identity last showed. */
export async function identityAccount(db: Database, issuer: string, subject: string) {
  const [row] = await db
    .select({ ...signInFields, shown: oauthIdentities.email })
    .from(oauthIdentities)
    .innerJoin(users, eq(users.id, oauthIdentities.userId))
    .where(and(eq(oauthIdentities.issuer, issuer), eq(oauthIdentities.subject, subject)));
  return row;
}

/** Keeps the address an identity shows up to date (for GET /auth/me), when it changed. */
export async function updateShownEmail(db: Database, issuer: string, subject: string, email: string) {
  await db
    .update(oauthIdentities)
    .set({ email })
    .where(
      and(
        eq(oauthIdentities.issuer, issuer),
        eq(oauthIdentities.subject, subject),
        sql`${oauthIdentities.email} IS NOT ${email}`,
      ),
    );
}

/**
 * Who holds `email`: the account (verified or not, and whether `provider` is linked to it already), or whether the
 * address is reserved.
 */
export async function addressHolder(db: Database, email: string, provider: string, now: number) {
  const [[holder], [reservation]] = await db.batch([
    db
      .select({
        id: users.id,
        isVerified: users.isVerified,
        linked: sql<number>`EXISTS (SELECT 1 FROM ${oauthIdentities} WHERE ${and(eq(oauthIdentities.userId, users.id), eq(oauthIdentities.provider, provider))})`,
      })
      .from(users)
      .where(eq(users.email, email)),
    db
      .select({ reserved: sql<number>`1` })
      .from(sql`(SELECT 1)`)
      .where(reserved(email, now)),
  ]);
  return { holder, reserved: reservation !== undefined };
}

/**
 * Links the identity to the account `ofUser` selects, unless the identity is linked already or the account has one of
 * this provider.
 */
function linkStatement(db: Database, ofUser: SQL | undefined, identity: NewIdentity) {
  return db
    .insert(oauthIdentities)
    .select(
      db
        .select({
          provider: sql<string>`${identity.provider}`.as("provider"),
          issuer: sql<string>`${identity.issuer}`.as("issuer"),
          subject: sql<string>`${identity.subject}`.as("subject"),
          userId: users.id,
          email: sql<string | null>`${identity.email ?? null}`.as("email"),
          createdAt: sql<number>`${identity.createdAt}`.as("created_at"),
        })
        .from(users)
        .where(ofUser),
    )
    .onConflictDoNothing();
}

/** The `identity.linked` event of the link statement just before it in the batch, if it linked. */
function linked(audit: AuditTrail, userId: number | SQL, identity: NewIdentity) {
  return audit.record({ type: "identity.linked", userId, data: { provider: identity.provider } }, changedRows());
}

export async function linkIdentity(db: Database, audit: AuditTrail, userId: number, identity: NewIdentity) {
  await db.batch([linkStatement(db, eq(users.id, userId), identity), ...linked(audit, userId, identity)]);
}

/**
 * A new verified account without a password for the identity's address, and the identity linked to the
 * account this INSERT created (never to one it found), with their events, in one transaction; nothing when the
 * address is taken (a concurrent sign-in or registration won: the caller reads the identity again) or reserved.
 */
export async function createPasswordless(
  db: Database,
  audit: AuditTrail,
  email: string,
  identity: NewIdentity,
  now: number,
) {
  const created = newAccount(db, { email, password: NO_PASSWORD, isVerified: true, mailClaimedAt: 0 }, now);
  // Right after the INSERT: changes() and last_insert_rowid() are the INSERT's, so the account's event is recorded
  // only if it made the account, and the identity goes to the account whose event was recorded, never to one it
  // found; concurrent sign-ins of the same identity that lose the INSERT find the identity linked once this
  // transaction is done.
  const registered = newEventId();
  const [[account]] = await db.batch([
    created,
    ...audit.record(
      {
        id: registered,
        type: "user.registered",
        userId: sql`last_insert_rowid()`,
        data: { email, method: "provider", provider: identity.provider },
      },
      changedRows(),
    ),
    linkStatement(db, and(eq(users.email, email), audit.recorded(registered)), identity),
    ...linked(audit, sql`(SELECT ${users.id} FROM ${users} WHERE ${users.email} = ${email})`, identity),
  ]);
  return account !== undefined;
}

/**
 * The owner of an address takes over the unverified account a squatter registered with it, in one
 * transaction, every statement only while the account is still unverified: the squatter's sessions, codes
 * and reset requests end, then the password goes (NO_PASSWORD), the address counts as verified and the
 * sign-in epoch moves on (a sign-in of the squatter's in flight opens nothing), and the identity is linked.
 */
export async function takeOver(
  ending: SessionEnding,
  audit: AuditTrail,
  userId: number,
  identity: NewIdentity,
  now = Date.now(),
) {
  const { db } = ending;
  const unverified = sql`EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${userId} AND ${users.isVerified} = 0)`;
  const [, , , [taken]] = await db.batch([
    ending.all(userId, unverified),
    db.delete(oneTimeCodes).where(and(eq(oneTimeCodes.userId, userId), unverified)),
    db.delete(resetRequests).where(and(eq(resetRequests.userId, userId), unverified)),
    db
      .update(users)
      .set({ ...passwordWrite(NO_PASSWORD, now), isVerified: true })
      .where(and(eq(users.id, userId), eq(users.isVerified, false)))
      .returning({ id: users.id }),
    linkStatement(db, eq(users.id, userId), identity),
    ...linked(audit, userId, identity),
  ]);
  return taken !== undefined;
}

/**
 * THE rule of the last way in: the account can still be entered without its identity of `provider`. Every
 * kind of credential is one condition here: a password, another identity (a passkey, once it exists, is one
 * more EXISTS).
 */
export function otherWayIn(userId: number, provider: string): SQL {
  return sql`(EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${userId} AND ${users.password} <> ${NO_PASSWORD})
    OR EXISTS (SELECT 1 FROM ${oauthIdentities} WHERE ${and(eq(oauthIdentities.userId, userId), ne(oauthIdentities.provider, provider))}))`;
}

/**
 * Unlinks the caller's identity of `provider` in one transaction, only while the caller's session is live
 * and the account keeps another way in: "dead" session, "absent" identity, "last" way in, or "unlinked".
 */
export async function unlinkIdentity(
  db: Database,
  audit: AuditTrail,
  caller: AccessClaims,
  provider: string,
  now: number,
) {
  const ofProvider = and(eq(oauthIdentities.userId, caller.userId), eq(oauthIdentities.provider, provider));
  const unlinking = and(ofProvider, liveSession(caller, now), otherWayIn(caller.userId, provider));
  // What is unlinked is read, and recorded, before the DELETE, under its very condition: one transaction.
  const [[live], [found], [unlinked]] = await db.batch([
    sessionCheck(db, caller, now),
    db.select({ provider: oauthIdentities.provider }).from(oauthIdentities).where(ofProvider),
    db.select({ provider: oauthIdentities.provider }).from(oauthIdentities).where(unlinking),
    ...audit.record(
      { type: "identity.unlinked", userId: caller.userId, data: { provider } },
      sql`EXISTS (SELECT 1 FROM ${oauthIdentities} WHERE ${unlinking})`,
    ),
    db.delete(oauthIdentities).where(unlinking),
  ]);
  if (!live) return "dead";
  if (!found) return "absent";
  return unlinked ? "unlinked" : "last";
}
