import { and, eq, lte, sql } from "drizzle-orm";
import { liveSessionOf } from "../auth/caller";
import { asCaller, forCallerOf } from "./runner";
import type { Bound, Placeholders } from "../db/compiled";
import { idempotencyKeys, notes } from "./schema";
import { badRequest } from "../lib/http";
import type { AccessClaims } from "../lib/access-token";
import { sha256Hex } from "../lib/crypto";
import type { Database } from "../types";
import { clockOwner, keysOf, type NotesCaller } from "./access";
import { MAX_IDEMPOTENCY_KEY_CHARS, NoteMessage } from "./messages";
import { newNoteRow } from "./queries";
import { nextRevision, noteJsonText } from "./sql";
import { DAY } from "../lib/units";

/**
 * Idempotent creates: `POST /notes` with an `Idempotency-Key` creates its note once; a repeat with the
 * same key and the same request within IDEMPOTENCY_KEY_TTL_MS gets the first answer again, byte for byte.
 * Rationale and the choices made: docs/notes-idempotency-search.md.
 */

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
/** Set to `true` on an answer that is a replay of an earlier one. */
export const IDEMPOTENT_REPLAYED_HEADER = "Idempotent-Replayed";
/** How long a key is remembered; the hourly cron deletes it after that (notesCleanUp in lifecycle.ts). */
export const IDEMPOTENCY_KEY_TTL_MS = DAY;
/** 1 to MAX_IDEMPOTENCY_KEY_CHARS visible ASCII characters (no space, no control character), taken as they are. */
const KEY_FORMAT = new RegExp(`^[\\x21-\\x7e]{1,${MAX_IDEMPOTENCY_KEY_CHARS}}$`);

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
  /**
   * The note's 201 body: created now (`watched`: the `alongside` statement answered a row), or (`replayed`) by
   * an earlier request with the key.
   */
  | { outcome: "created"; body: string; revision: number; watched: boolean }
  | { outcome: "replayed"; body: string; revision: number }
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
 * 5. read the key's row, which tells this request whether it won, and what to replay otherwise;
 * and `alongside`, if given (whether the caller's notes are watched), whose rows say `watched`.
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
  alongside?: Bound<unknown>,
): Promise<CreateOnce> {
  const values = { key, hash: await requestHash(title, content), claim: crypto.randomUUID(), title, content };
  const bind = <Row>(step: Step<Row>) => step(db, caller, now, values);
  const found = await asCaller(db, caller, now, [
    bind(forget),
    bind(claimKey),
    bind(insertClaimed),
    bind(storeAnswer),
    bind(readKey),
    ...(alongside ? [alongside] : []),
  ]);
  if (!found) return { outcome: "unauthorized" };
  const [row] = found[4];
  const watched = (found[5]?.length ?? 0) > 0;

  // The claim was made in this batch unless the key was taken, so a row is always there.
  if (!row) throw new Error("idempotency key row missing after its claim");
  if (row.claim === values.claim && row.response !== null)
    return { outcome: "created", body: row.response, revision: row.revision ?? 0, watched };
  if (row.requestHash !== values.hash) return { outcome: "mismatch" };
  if (row.response === null) return { outcome: "in_progress" };
  return { outcome: "replayed", body: row.response, revision: row.revision ?? 0 };
}

/** The values of the batch's statements: the key, the request's hash and this request's claim token, the note. */
type KeyValues = { key: string; hash: string; claim: string; title: string; content: string };
type P = Placeholders<KeyValues & { now: number }>;
/** A step of the batch, bound for a request. */
type Step<Row> = (db: Database, caller: AccessClaims | undefined, now: number, values: KeyValues) => Bound<Row>;

/** The caller's row of the key (or the public one). */
const thisKey = (p: P, caller: NotesCaller) => and(keysOf(caller), eq(idempotencyKeys.key, p.key));
/** The same row, if this request's claim holds it. */
const claimed = (p: P, caller: NotesCaller) => and(thisKey(p, caller), eq(idempotencyKeys.claim, p.claim));

/** 1. Forgets the key if it has expired. */
const forget = forCallerOf((db, p: P, caller) =>
  db
    .delete(idempotencyKeys)
    .where(and(thisKey(p, caller), lte(idempotencyKeys.createdAt, sql`${p.now} - ${IDEMPOTENCY_KEY_TTL_MS}`)))
    .returning({ id: idempotencyKeys.id }),
);

/** 2. Claims it, with this request's token; with a caller only while the caller's session is live. */
const claimKey = forCallerOf((db, p: P, caller) => {
  const claimRow = { key: p.key, requestHash: p.hash, claim: p.claim, createdAt: p.now };
  if (!caller)
    return db
      .insert(idempotencyKeys)
      .values({ ...claimRow, userId: null })
      .onConflictDoNothing()
      .returning({ id: idempotencyKeys.id });
  const session = liveSessionOf(db, caller, caller.now);
  return db
    .insert(idempotencyKeys)
    .select(
      // Every column, in the table's order (drizzle's rule for INSERT … SELECT); a NULL id is assigned.
      db
        .select({
          id: sql<number>`NULL`.as("id"),
          userId: session.userId,
          key: sql<string>`${p.key}`.as("key"),
          requestHash: sql<string>`${p.hash}`.as("request_hash"),
          claim: sql<string>`${p.claim}`.as("claim"),
          response: sql<string | null>`NULL`.as("response"),
          revision: sql<number | null>`NULL`.as("revision"),
          createdAt: sql<number>`${p.now}`.as("created_at"),
        })
        .from(session)
        // SQLite would read the ON CONFLICT below as a join's ON after a bare FROM: a WHERE ends the FROM
        // (the parsing ambiguity of sqlite.org/lang_upsert.html).
        .where(sql`true`),
    )
    .onConflictDoNothing()
    .returning({ id: idempotencyKeys.id });
});

/** 3. Inserts the note from the claim row carrying this request's token: only the winner creates. */
const insertClaimed = forCallerOf((db, p: P, caller) =>
  db
    .insert(notes)
    .select(
      db
        .select(newNoteRow(p, idempotencyKeys.userId, nextRevision(clockOwner(caller))))
        .from(idempotencyKeys)
        .where(claimed(p, caller)),
    )
    .returning({ id: notes.id }),
);

/**
 * 4. Stores the answer on the claim. With AUTOINCREMENT the note just inserted has the highest id there is, within this
 * transaction.
 */
const storeAnswer = forCallerOf((db, p: P, caller) =>
  db
    .update(idempotencyKeys)
    .set({
      response: sql`(SELECT ${noteJsonText} FROM ${notes} WHERE ${notes.id} = (SELECT max(${notes.id}) FROM ${notes}))`,
      revision: sql`(SELECT ${notes.revision} FROM ${notes} WHERE ${notes.id} = (SELECT max(${notes.id}) FROM ${notes}))`,
    })
    .where(claimed(p, caller))
    .returning({ id: idempotencyKeys.id }),
);

/** 5. Reads the key's row, which tells this request whether it won, and what to replay otherwise. */
const readKey = forCallerOf((db, p: P, caller) =>
  db
    .select({
      claim: idempotencyKeys.claim,
      // Rows come back keyed by column name: this column's is request_hash.
      requestHash: sql<string>`${idempotencyKeys.requestHash}`.as("requestHash"),
      response: idempotencyKeys.response,
      revision: idempotencyKeys.revision,
    })
    .from(idempotencyKeys)
    .where(thisKey(p, caller)),
);
