import { and, eq, gt, isNotNull, isNull, lt, lte, sql, type SQL } from "drizzle-orm";
import type { CallerValues } from "../../auth/caller";
import { compile, rowsOf, type Bound, type Placeholders } from "../../db/compiled";
import type { AccessClaims } from "../../lib/access-token";
import type { Database } from "../../types";
import { roleOf, visibleTo, writableBy } from "../access";
import { asCaller, forCallerOnly } from "../runner";
import { notes } from "../schema";
import { nextRevisionOfRow } from "../sql";
import { MAX_ATTACHMENTS_PER_NOTE, REMOVALS_KEPT_MS, REMOVALS_PER_CALL, UPLOAD_WINDOW_MS } from "./policy";
import { attachmentRemovals, attachments } from "./schema";
import type { SniffedType } from "./sniff";

/**
 * Every statement of attachments, and the only place their SQL lives. Who may see and write a note is
 * access.ts's: an attachment is seen through its note (visibleTo: its owner and the accounts it is shared with)
 * and written only while its note is writable by the caller (writableBy: its owner or an editor, while its session
 * is live); its bytes count against the note's owner's quota. The statements a request
 * makes are compiled once per isolate (forCallerOnly) and run in one round trip with the session check
 * (asCaller). Adding or removing an attachment moves its note's revision in the same transaction, so the
 * note's ETag changes and the changes feed reports it.
 */

type Caller = Placeholders<CallerValues>;

/** An attachment row as the statements answer it: keyed by column name (db/compiled.ts). */
export interface StoredAttachment {
  id: string;
  note_id: number;
  filename: string;
  content_type: SniffedType;
  size: number;
  sha256: string;
  created_at: number;
}

const stored = {
  id: attachments.id,
  note_id: attachments.noteId,
  filename: attachments.filename,
  content_type: sql<SniffedType>`${attachments.contentType}`.as("content_type"),
  size: attachments.size,
  sha256: sql<string>`${attachments.sha256}`.as("sha256"),
  created_at: attachments.createdAt,
};

/** Attachments, uploads under way included, of note `noteId`. */
const countOnNote = (noteId: SQL) =>
  sql<number>`(SELECT count(*) FROM ${attachments} WHERE ${eq(attachments.noteId, noteId)})`;
/** Bytes account `userId` has stored or is uploading (on its own notes: the owner's, whoever uploaded them). */
const bytesOf = (userId: SQL) =>
  sql<number>`(SELECT coalesce(sum(${attachments.size}), 0) FROM ${attachments} WHERE ${eq(attachments.userId, userId)})`;
/** The note of the attachment row at hand (`note_id`), writable by the caller. */
const noteWritable = (caller: Caller, noteId: SQL<number>) =>
  sql`EXISTS (SELECT 1 FROM ${notes} WHERE ${writableBy(caller, noteId)})`;

type ReserveValues = { id: string; noteId: number; filename: string; size: number; quota: number };

/**
 * One statement reserves the upload: the row (so its bytes and its place on the note) is made only if the
 * note is the caller's and writable, holds fewer than MAX_ATTACHMENTS_PER_NOTE, and the account's bytes plus
 * this file's stay within the quota. D1 runs one write at a time, so concurrent uploads are each judged
 * on every reservation made before them: together they never pass the quota.
 */
const reserve = forCallerOnly((db, p: Placeholders<ReserveValues & CallerValues>) =>
  db
    .insert(attachments)
    .select(
      db
        .select({
          id: sql<string>`${p.id}`.as("id"),
          noteId: notes.id,
          userId: sql<number>`${notes.userId}`.as("user_id"),
          filename: sql<string>`${p.filename}`.as("filename"),
          size: sql<number>`${p.size}`.as("size"),
          contentType: sql<null>`NULL`.as("content_type"),
          sha256: sql<null>`NULL`.as("sha256"),
          createdAt: sql<number>`${p.now}`.as("created_at"),
          storedAt: sql<null>`NULL`.as("stored_at"),
        })
        .from(notes)
        .where(
          and(
            writableBy(p, p.noteId),
            lt(countOnNote(p.noteId), MAX_ATTACHMENTS_PER_NOTE),
            // The note's owner's quota, also when an editor the note is shared with uploads.
            lte(sql`${bytesOf(sql`${notes.userId}`)} + ${p.size}`, p.quota),
          ),
        ),
    )
    .returning({ id: attachments.id }),
);

/** Reserves an upload: true when reserved, false when refused (see roomOn), undefined when the session is not live. */
export async function reserveUpload(db: Database, caller: AccessClaims, now: number, values: ReserveValues) {
  const rows = await asCaller(db, caller, now, reserve(db, caller, now, values));
  return rows && rows.length > 0;
}

const room = forCallerOnly((db, p: Placeholders<{ noteId: number } & CallerValues>) =>
  db
    .select({
      role: roleOf(p).as("role"),
      count: countOnNote(p.noteId).as("count"),
      bytes: bytesOf(sql`${notes.userId}`).as("bytes"),
    })
    .from(notes)
    .where(and(eq(notes.id, p.noteId), visibleTo(p))),
);

/**
 * Why a reservation (or a deletion) was refused, read after it: what the caller is to the note (a viewer may not
 * write), its attachments and its owner's bytes, or no row when the caller may not see the note (undefined when
 * the session is not live).
 */
export async function roomOn(db: Database, caller: AccessClaims, now: number, noteId: number) {
  const rows = await asCaller(db, caller, now, room(db, caller, now, { noteId }));
  return rows && (rows[0] ?? null);
}

type CompleteValues = { id: string; noteId: number; contentType: string; sha256: string };
const pending = (p: Placeholders<{ id: string; noteId: number }>) =>
  and(eq(attachments.id, p.id), eq(attachments.noteId, p.noteId), isNull(attachments.storedAt));
const storedOne = (p: Placeholders<{ id: string; noteId: number }>) =>
  and(eq(attachments.id, p.id), eq(attachments.noteId, p.noteId), isNotNull(attachments.storedAt));

/** The note's next revision, when `condition` holds and the caller may write the note. */
const noteMoved = (db: Database, caller: Caller, noteId: SQL<number>, condition: SQL) =>
  db
    .update(notes)
    .set({ revision: nextRevisionOfRow() })
    .where(and(writableBy(caller, noteId), sql`EXISTS (SELECT 1 FROM ${attachments} WHERE ${condition})`))
    .returning({ id: notes.id });

// The note moves first, on the same conditions as the write after it: one transaction, both or neither.
const movedForNew = forCallerOnly((db, p: Placeholders<CompleteValues & CallerValues>) =>
  noteMoved(db, p, p.noteId, pending(p)!),
);
const markStored = forCallerOnly((db, p: Placeholders<CompleteValues & CallerValues>) =>
  db
    .update(attachments)
    .set({ contentType: p.contentType, sha256: p.sha256, storedAt: p.now })
    .where(and(pending(p), noteWritable(p, p.noteId)))
    .returning({ id: attachments.id }),
);

/**
 * The upload's bytes are in R2: the row becomes visible and the note moves on, while the note is still the
 * caller's to write, in one batch with `watching` (which of the note's readers anyone watches, notes/area.ts).
 * Whether it was done (not: the row or the note is gone) and the watched accounts; undefined when the session is
 * not live.
 */
export async function completeUpload(
  db: Database,
  caller: AccessClaims,
  now: number,
  values: CompleteValues,
  watching: Bound<{ userId: number }>,
) {
  const rows = await asCaller(db, caller, now, [
    movedForNew(db, caller, now, values),
    markStored(db, caller, now, values),
    watching,
  ] as const);
  return rows && { done: rows[1].length > 0, watched: rows[2] };
}

const release = compile((db, p: Placeholders<{ id: string }>) =>
  db
    .delete(attachments)
    .where(and(eq(attachments.id, p.id), isNull(attachments.storedAt)))
    .returning({ id: attachments.id }),
);

/** Gives up a reservation whose upload failed: its bytes leave the quota (the trigger queues its key). */
export async function releaseUpload(db: Database, id: string): Promise<void> {
  await rowsOf(release(db.$client, { id }));
}

type OneValues = { id: string; noteId: number };
const movedForRemoved = forCallerOnly((db, p: Placeholders<OneValues & CallerValues>) =>
  noteMoved(db, p, p.noteId, storedOne(p)!),
);
const remove = forCallerOnly((db, p: Placeholders<OneValues & CallerValues>) =>
  db
    .delete(attachments)
    .where(and(storedOne(p), noteWritable(p, p.noteId)))
    .returning({ id: attachments.id }),
);

/**
 * Deletes an attachment of a note the caller may write and moves the note on, in one batch with `watching` (the
 * note's readers anyone watches): whether it was there and the watched accounts (undefined: session not live).
 */
export async function deleteAttachment(
  db: Database,
  caller: AccessClaims,
  now: number,
  values: OneValues,
  watching: Bound<{ userId: number }>,
) {
  const rows = await asCaller(db, caller, now, [
    watching,
    movedForRemoved(db, caller, now, values),
    remove(db, caller, now, values),
  ] as const);
  return rows && { deleted: rows[2].length > 0, watched: rows[0] };
}

const readOne = forCallerOnly((db, p: Placeholders<OneValues & CallerValues>) =>
  db
    .select(stored)
    .from(attachments)
    .innerJoin(notes, eq(notes.id, attachments.noteId))
    .where(and(storedOne(p), visibleTo(p))),
);

/** The caller's attachment `id` of note `noteId`, stored and visible: the row, null, or undefined (session not live). */
export async function readAttachment(db: Database, caller: AccessClaims, now: number, values: OneValues) {
  const rows = await asCaller(db, caller, now, readOne(db, caller, now, values));
  return rows && (rows[0] ?? null);
}

const listOf = forCallerOnly((db, p: Placeholders<{ noteId: number } & CallerValues>) =>
  db
    .select({ note: notes.id, ...stored })
    .from(notes)
    .leftJoin(attachments, and(eq(attachments.noteId, notes.id), isNotNull(attachments.storedAt)))
    .where(and(eq(notes.id, p.noteId), visibleTo(p)))
    .orderBy(attachments.createdAt, sql`${attachments}.rowid`),
);

/** The stored attachments of the caller's note, oldest first; null when the note is not the caller's (undefined: session not live). */
export async function listAttachments(db: Database, caller: AccessClaims, now: number, noteId: number) {
  const rows = await asCaller(db, caller, now, listOf(db, caller, now, { noteId }));
  if (!rows) return undefined;
  if (rows.length === 0) return null;
  return rows.filter((row) => row.id !== null) as StoredAttachment[];
}

const linked = compile((db, p: Placeholders<{ id: string }>) =>
  db
    .select(stored)
    .from(attachments)
    .where(and(eq(attachments.id, p.id), isNotNull(attachments.storedAt))),
);

/**
 * The attachment a signed link names, if it is stored: its row lives exactly as long as its note and its
 * account (both delete it with them).
 */
export async function linkedAttachment(db: Database, id: string): Promise<StoredAttachment | undefined> {
  const [row] = await rowsOf(linked(db.$client, { id }));
  return row;
}

// An account's deletion and the clean-up (lifecycle.ts, scheduled.ts): ordinary statements.

/** Deletes every attachment of account `userId` while `guard` holds (inside the account-deletion batch). */
export function accountAttachmentsDeletion(db: Database, userId: number, guard: SQL) {
  return db.delete(attachments).where(and(eq(attachments.userId, userId), guard));
}

/** Reservations whose upload can no longer finish (its Worker stopped): their rows go, their keys are queued. */
export function abandonedUploads(db: Database, now: number) {
  return db
    .delete(attachments)
    .where(and(isNull(attachments.storedAt), lte(attachments.createdAt, now - UPLOAD_WINDOW_MS)))
    .returning({ id: attachments.id });
}

/** A page of queued removal keys after `after`, in key order. */
export async function queuedRemovals(db: Database, after: string): Promise<string[]> {
  const rows = await db
    .select({ key: attachmentRemovals.key })
    .from(attachmentRemovals)
    .where(gt(attachmentRemovals.key, after))
    // An expression rather than a bare bound LIMIT (CONTRIBUTING.md, "A statement on a hot path").
    .orderBy(sql`${attachmentRemovals.key} LIMIT ${REMOVALS_PER_CALL} + 0`);
  return rows.map((row) => row.key);
}

/** Forgets the queued keys up to `through` whose objects no upload can write any more: how many. */
export async function forgetRemovals(db: Database, through: string, now: number): Promise<number> {
  const rows = await db
    .delete(attachmentRemovals)
    .where(and(lte(attachmentRemovals.key, through), lte(attachmentRemovals.queuedAt, now - REMOVALS_KEPT_MS)))
    .returning({ key: attachmentRemovals.key });
  return rows.length;
}
