import { and, eq, gt, lt, not, or, sql, type SQL } from "drizzle-orm";
import { accountVerifying, isCallersAddress, type CallerValues } from "../../auth/caller";
import type { Bound, Placeholders } from "../../db/compiled";
import type { AccessClaims } from "../../lib/access-token";
import type { Database } from "../../types";
import { managedBy, roleOf, shareRemovableBy, shareVisibleTo, visibleTo } from "../access";
import { asCaller, forCallerOnly } from "../runner";
import { notes } from "../schema";
import { MAX_SHARES_PER_NOTE, NEW_SHARE_ADDRESSES_PER_DAY, SHARE_ADDRESS_WINDOW_MS } from "./policy";
import { noteShares, shareMailAddresses, type ShareRole } from "./schema";

/**
 * Every statement of shares with accounts, and the only place their SQL lives. Who may do what is access.ts's:
 * the owner makes, lists, changes and ends them; the account a share reached sees it and may end it (leaving the
 * note). Each limit is decided by the statement that writes (docs/sharing.md), never by a read before it.
 */

type Caller = Placeholders<CallerValues>;

/** Shares of note `noteId`, those not yet reaching an account included. */
const sharesOn = (noteId: SQL<number>) =>
  sql<number>`(SELECT count(*) FROM ${noteShares} WHERE ${eq(noteShares.noteId, noteId)})`;

/** The caller's addresses mailed within the window: each counts once, until it is a window old. */
const recentAddresses = (p: Caller) =>
  and(
    eq(shareMailAddresses.ownerId, p.userId),
    gt(shareMailAddresses.mailedAt, sql`${p.now} - ${SHARE_ADDRESS_WINDOW_MS}`),
  );
const addressesMailed = (p: Caller) =>
  sql<number>`(SELECT count(*) FROM ${shareMailAddresses} WHERE ${recentAddresses(p)})`;
const addressMailed = (p: Caller, email: SQL<string>) =>
  sql<boolean>`EXISTS (SELECT 1 FROM ${shareMailAddresses} WHERE ${and(recentAddresses(p), eq(shareMailAddresses.email, email))})`;

type CreateValues = { id: string; noteId: number; email: string; role: ShareRole };
type CreateP = Placeholders<CreateValues & CallerValues>;

/**
 * One statement makes the share, only while the caller owns the note, the address is not the caller's own, the
 * note has fewer than MAX_SHARES_PER_NOTE shares and the address is one the caller mailed within the day or the
 * caller mailed fewer than NEW_SHARE_ADDRESSES_PER_DAY addresses within it; the unique index refuses the same
 * address twice. It reaches the account that has verified the address now, if any (a trigger binds it later
 * otherwise). D1 runs one write at a time: no burst passes a limit.
 */
const create = forCallerOnly((db, p: CreateP) =>
  db
    .insert(noteShares)
    .select(
      // Every column, in the table's order (drizzle's rule for INSERT … SELECT).
      db
        .select({
          id: sql<string>`${p.id}`.as("id"),
          noteId: notes.id,
          email: sql<string>`${p.email}`.as("email"),
          role: sql<ShareRole>`${p.role}`.as("role"),
          createdAt: sql<number>`${p.now}`.as("created_at"),
          granteeId: sql<number | null>`${accountVerifying(p.email)}`.as("grantee_id"),
        })
        .from(notes)
        .where(
          and(
            managedBy(p, p.noteId),
            not(isCallersAddress(p, p.email)),
            lt(sharesOn(p.noteId), MAX_SHARES_PER_NOTE),
            or(addressMailed(p, p.email), lt(addressesMailed(p), NEW_SHARE_ADDRESSES_PER_DAY)),
          ),
        ),
    )
    .onConflictDoNothing()
    .returning({ id: noteShares.id }),
);

/** The address of the share just made, claimed in the caller's addresses of the day (a new one, or one a day old). */
const claimAddress = forCallerOnly((db, p: CreateP) =>
  db
    .insert(shareMailAddresses)
    .select(
      db
        .select({
          ownerId: sql<number>`${p.userId}`.as("owner_id"),
          email: noteShares.email,
          mailedAt: sql<number>`${p.now}`.as("mailed_at"),
        })
        .from(noteShares)
        .where(eq(noteShares.id, p.id)),
    )
    .onConflictDoUpdate({
      target: [shareMailAddresses.ownerId, shareMailAddresses.email],
      set: { mailedAt: sql`excluded.mailed_at` },
      setWhere: sql`${shareMailAddresses.mailedAt} <= ${p.now} - ${SHARE_ADDRESS_WINDOW_MS}`,
    })
    .returning({ email: shareMailAddresses.email }),
);

/**
 * Makes a share and claims its address in one batch, with `watching` (whether the account it reached is watched,
 * read after it): whether it was made, and the watched accounts; undefined when the session is not live.
 */
export async function createShare(
  db: Database,
  caller: AccessClaims,
  now: number,
  values: CreateValues,
  watching: Bound<{ userId: number }>,
) {
  const rows = await asCaller(db, caller, now, [
    create(db, caller, now, values),
    claimAddress(db, caller, now, values),
    watching,
  ] as const);
  return rows && { created: rows[0].length > 0, watched: rows[2] };
}

const refusal = forCallerOnly((db, p: CreateP) =>
  db
    .select({
      role: roleOf(p).as("role"),
      self: sql<number>`${isCallersAddress(p, p.email)}`.as("self"),
      taken:
        sql<number>`EXISTS (SELECT 1 FROM ${noteShares} WHERE ${and(eq(noteShares.noteId, notes.id), eq(noteShares.email, p.email))})`.as(
          "taken",
        ),
      shares: sharesOn(p.noteId).as("shares"),
      mailed: sql<number>`${addressMailed(p, p.email)}`.as("mailed"),
      addresses: addressesMailed(p).as("addresses"),
      oldest: sql<
        number | null
      >`(SELECT min(${shareMailAddresses.mailedAt}) FROM ${shareMailAddresses} WHERE ${recentAddresses(p)})`.as(
        "oldest",
      ),
    })
    .from(notes)
    .where(and(eq(notes.id, p.noteId), visibleTo(p))),
);

/** Why a share was not made, read after it: the first reason that holds (routes decide the answer), or no row. */
export async function whyNotShared(db: Database, caller: AccessClaims, now: number, values: CreateValues) {
  const rows = await asCaller(db, caller, now, refusal(db, caller, now, values));
  return rows && (rows[0] ?? null);
}

/** A share as the statements answer it, keyed as its JSON is. */
export interface StoredShare {
  id: string;
  email: string;
  role: ShareRole;
  created_at: number;
}

const shareFields = {
  id: noteShares.id,
  email: noteShares.email,
  role: noteShares.role,
  created_at: noteShares.createdAt,
};

const listOf = forCallerOnly((db, p: Placeholders<{ noteId: number } & CallerValues>) =>
  db
    .select({ access: roleOf(p).as("access"), ...shareFields })
    .from(notes)
    .leftJoin(noteShares, and(eq(noteShares.noteId, notes.id), shareVisibleTo(p)))
    .where(and(eq(notes.id, p.noteId), visibleTo(p)))
    .orderBy(noteShares.createdAt, noteShares.id),
);

/**
 * The shares of note `noteId` the caller may see (all of them for its owner, its own for a grantee), with what the
 * caller is to the note (`role` null: it may not see it); undefined when the session is not live.
 */
export async function listShares(db: Database, caller: AccessClaims, now: number, noteId: number) {
  const rows = await asCaller(db, caller, now, listOf(db, caller, now, { noteId }));
  if (!rows) return undefined;
  const shares = rows.flatMap((row) =>
    row.id === null ? [] : [{ id: row.id, email: row.email!, role: row.role!, created_at: row.created_at! }],
  );
  return { role: rows[0]?.access ?? null, shares };
}

type OneValues = { id: string; noteId: number };
const oneShare = (p: Placeholders<OneValues>) => and(eq(noteShares.id, p.id), eq(noteShares.noteId, p.noteId));

const changeRole = forCallerOnly((db, p: Placeholders<OneValues & { role: ShareRole } & CallerValues>) =>
  db
    .update(noteShares)
    .set({ role: sql`${p.role}` })
    .where(and(oneShare(p), sql`EXISTS (SELECT 1 FROM ${notes} WHERE ${managedBy(p, p.noteId)})`))
    .returning(shareFields),
);

/** Sets a share's role (the owner only): the share, or null when nothing was changed (undefined: session not live). */
export async function setShareRole(
  db: Database,
  caller: AccessClaims,
  now: number,
  values: OneValues & { role: ShareRole },
): Promise<StoredShare | null | undefined> {
  const rows = await asCaller(db, caller, now, changeRole(db, caller, now, values));
  return rows && (rows[0] ?? null);
}

const remove = forCallerOnly((db, p: Placeholders<OneValues & CallerValues>) =>
  db
    .delete(noteShares)
    .where(and(oneShare(p), shareRemovableBy(p)))
    .returning({ id: noteShares.id }),
);

/**
 * Ends a share (its owner revoking it, or its grantee leaving), at once, in one batch with `watching` read before it
 * (the account it reached, to tell): whether it was there, and the watched accounts (undefined: session not live).
 */
export async function endShare(
  db: Database,
  caller: AccessClaims,
  now: number,
  values: OneValues,
  watching: Bound<{ userId: number }>,
) {
  const rows = await asCaller(db, caller, now, [watching, remove(db, caller, now, values)] as const);
  return rows && { ended: rows[1].length > 0, watched: rows[0] };
}

/** The shares account `userId` received, while `guard` holds: for its deletion (lifecycle.ts). */
export function sharesReceivedBy(db: Database, userId: number, guard: SQL) {
  return db.delete(noteShares).where(and(eq(noteShares.granteeId, userId), guard));
}
