import { and, eq, isNull, lte, sql } from "drizzle-orm";
import { callerSession, sessionCheck } from "../auth/caller";
import { idempotencyKeys, notes, sessions } from "../db/schema";
import { badRequest } from "../lib/http";
import { sha256Hex, type AccessClaims } from "../lib/tokens";
import type { Database } from "../types";
import { nextRevision, PUBLIC_OWNER } from "./conditional";
import { NoteMessage, noteJsonText } from "./schemas";
import { DAY } from "../lib/units";

/**
 * Idempotent creates: `POST /notes` with an `Idempotency-Key` creates its note once; a repeat with the
 * same key and the same request within IDEMPOTENCY_KEY_TTL_MS gets the first answer again, byte for byte.
 * Rationale and the choices made: docs/notes-idempotency-search.md.
 */

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
/** Set to `true` on an answer that is a replay of an earlier one. */
export const IDEMPOTENT_REPLAYED_HEADER = "Idempotent-Replayed";
/** How long a key is remembered; the hourly cron deletes it after that (see scheduled.ts). */
export const IDEMPOTENCY_KEY_TTL_MS = DAY;
/** 1 to 255 visible ASCII characters (no space, no control character), taken as they are. */
const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/;

/** The request's key; undefined without the header; a 400 when it is malformed. */
export function parseIdempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (!KEY_FORMAT.test(header)) throw badRequest(NoteMessage.invalidIdempotencyKey);
  return header;
}

/**
 * What a create is compared by: the note it asks for (title and content as parsed), not the raw bytes. A
 * client that retries with its JSON written differently (key order, spacing, escapes, fields we ignore)
 * is asking for the same note; anything that would create a different note is a different request.
 */
export function requestHash(title: string, content: string): Promise<string> {
  return sha256Hex(JSON.stringify([title, content]));
}

export type CreateOnce =
  /** The note's 201 body: created now, or (`replayed`) by an earlier request with the key. */
  | { outcome: "created" | "replayed"; body: string; revision: number }
  /** The caller's session is not live: nothing was claimed or created. */
  | { outcome: "unauthorized" }
  /** The key was used with another request (422). */
  | { outcome: "mismatch" }
  /** The key's first request has not finished (409). */
  | { outcome: "in_progress" };

/**
 * Creates the note unless the caller's key is already taken, in ONE batch (one D1 transaction):
 * 1. forget the key if it has expired (the cron may not have run yet);
 * 2. claim it: `INSERT … ON CONFLICT DO NOTHING`, with a random claim token; with NOTES_AUTH=required only
 *    while the caller's session is live. Of concurrent requests exactly one claim wins: D1 runs one
 *    transaction at a time and the unique index decides;
 * 3. insert the note by selecting from the claim row carrying this request's token, so only the winner
 *    creates, and the note gets the claim's owner;
 * 4. store the answer (the note's JSON, written by SQLite) in the claim row;
 * 5. read the key's row, which tells this request whether it won, and what to replay otherwise.
 * The claim, the note and the stored answer commit together or not at all: a crash or an error cannot
 * leave a claimed key without its note (which would answer 409 until it expires), nor a note without its
 * key (which a retry would create twice). So a repeat never sees the first request half done: it waits
 * behind it in D1 and gets the replay; the 409 is only the answer to a row without its stored answer.
 */
export async function createOnce(
  db: Database,
  caller: AccessClaims | undefined,
  key: string,
  title: string,
  content: string,
  now: number,
): Promise<CreateOnce> {
  const hash = await requestHash(title, content);
  const claim = crypto.randomUUID();
  const thisKey = and(caller ? eq(idempotencyKeys.userId, caller.userId) : isNull(idempotencyKeys.userId), eq(idempotencyKeys.key, key));
  const claimed = and(thisKey, eq(idempotencyKeys.claim, claim));

  const claimKey = caller
    ? db
        .insert(idempotencyKeys)
        .select(
          // Every column, in the table's order (drizzle's rule for INSERT … SELECT); a NULL id is assigned.
          db
            .select({
              id: sql<number>`NULL`.as("id"),
              userId: sessions.userId,
              key: sql<string>`${key}`.as("key"),
              requestHash: sql<string>`${hash}`.as("request_hash"),
              claim: sql<string>`${claim}`.as("claim"),
              response: sql<string | null>`NULL`.as("response"),
              revision: sql<number | null>`NULL`.as("revision"),
              createdAt: sql<number>`${now}`.as("created_at"),
            })
            .from(sessions)
            .where(callerSession(caller, now)),
        )
        .onConflictDoNothing()
    : db.insert(idempotencyKeys).values({ userId: null, key, requestHash: hash, claim, createdAt: now }).onConflictDoNothing();

  const statements = [
    db.delete(idempotencyKeys).where(and(thisKey, lte(idempotencyKeys.createdAt, now - IDEMPOTENCY_KEY_TTL_MS))),
    claimKey,
    db.insert(notes).select(
      db
        .select({
          id: sql<number>`NULL`.as("id"),
          title: sql<string>`${title}`.as("title"),
          content: sql<string>`${content}`.as("content"),
          createdAt: sql<number>`${now}`.as("created_at"),
          userId: idempotencyKeys.userId,
          revision: sql<number>`${nextRevision(sql`coalesce(${idempotencyKeys.userId}, ${PUBLIC_OWNER})`)}`.as("revision"),
        })
        .from(idempotencyKeys)
        .where(claimed),
    ),
    // With AUTOINCREMENT the note just inserted has the highest id there is, within this transaction.
    db
      .update(idempotencyKeys)
      .set({
        response: sql`(SELECT ${noteJsonText} FROM ${notes} WHERE ${notes.id} = (SELECT max(${notes.id}) FROM ${notes}))`,
        revision: sql`(SELECT ${notes.revision} FROM ${notes} WHERE ${notes.id} = (SELECT max(${notes.id}) FROM ${notes}))`,
      })
      .where(claimed),
    db
      .select({ claim: idempotencyKeys.claim, requestHash: idempotencyKeys.requestHash, response: idempotencyKeys.response, revision: idempotencyKeys.revision })
      .from(idempotencyKeys)
      .where(thisKey),
  ] as const;

  let row: { claim: string; requestHash: string; response: string | null; revision: number | null } | undefined;
  if (caller) {
    const [live, , , , , found] = await db.batch([sessionCheck(db, caller, now), ...statements]);
    if (live.length === 0) return { outcome: "unauthorized" };
    row = found[0];
  } else {
    row = (await db.batch(statements))[4][0];
  }

  // The claim was made in this batch unless the key was taken, so a row is always there.
  if (!row) throw new Error("idempotency key row missing after its claim");
  if (row.claim === claim && row.response !== null) return { outcome: "created", body: row.response, revision: row.revision ?? 0 };
  if (row.requestHash !== hash) return { outcome: "mismatch" };
  if (row.response === null) return { outcome: "in_progress" };
  return { outcome: "replayed", body: row.response, revision: row.revision ?? 0 };
}
