import { and, gt, sql, type SQL } from "drizzle-orm";
import { Hono } from "hono";
import * as v from "valibot";
import { asCaller, forCallerOf } from "./runner";
import type { Placeholders } from "../db/compiled";
import { noteClocks, notes, noteTombstones } from "./schema";
import { sharedChanges } from "./sharing/schema";
import { describeRoute, json, jsonError, ref } from "../lib/describe";
import { noStore } from "../lib/security-headers";
import { allowedMethods, methodNotAllowed } from "../lib/http";
import { base64url, fromBase64url } from "../lib/encoding";
import { DAY } from "../lib/units";
import { queryParams } from "../lib/validation";
import type { AppEnv } from "../types";
import { clockedFor, clockOwner, sharedChangesOf, tombstonesOf, type NotesCaller } from "./access";
import { jsonText } from "./answers";
import { etagOf } from "./conditional";
import { notesErrors, notesOperation } from "./docs";
import { notesUnauthorized, requireNotesAuth } from "./require-auth";
import { NoteMessage } from "./messages";
import { safeInteger, type NoteJson } from "./requests";
import { clockValue, estimatedJsonBytes, LIST_CHUNK_BYTES, NOTE_JSON_OVERHEAD, noteJsonText } from "./sql";

/**
 * The changes feed (`GET /changes`): what was committed to the caller's notes, and to the notes shared with it,
 * after a cursor, in commit order, for offline sync. Every write moves its owner's clock on in the statement that writes
 * (drizzle/0012), and a note carries the clock's value of its last change as its revision; a deletion
 * leaves a tombstone numbered the same way. So "after cursor n" is one indexed query: the notes whose
 * revision is above n (their latest state, each once) and the tombstones above n, merged in order. A
 * write committed while a client pages gets a number above every one committed before it, so no cursor
 * skips it. The clocks are per owner, so the notes of each user could move to a database of their own.
 * See docs/sync.md.
 */

/** Tombstones are kept this long; a cursor from before the oldest one kept is refused (410). */
export const TOMBSTONES_KEPT_MS = 30 * DAY;
export const MAX_CHANGES_PAGE = 100;

/** A change as the feed answers it. */
export type ChangeJson = { type: "upsert"; note: NoteJson; etag: string } | { type: "delete"; id: number };
export interface ChangesPage {
  changes: ChangeJson[];
  cursor: string;
  has_more: boolean;
}

/**
 * A cursor, `v1:<seq>:<base>` in base64url (opaque to clients, versioned for us): the client has every
 * change up to `seq`, and needs the deletions after `base` (the point its copy is consistent from: where
 * it last caught up, or where a sync from scratch began, since a note deleted before that was never in
 * its copy). Deletions are kept 30 days: a cursor whose `base` is older than the oldest kept is a 410.
 */
export interface Cursor {
  seq: number;
  base: number;
}

const CURSOR = /^v1:(0|[1-9][0-9]{0,15}):(0|[1-9][0-9]{0,15})$/;

export function cursorOf({ seq, base }: Cursor): string {
  return base64url(new TextEncoder().encode(`v1:${seq}:${base}`));
}

/** The cursor a client holds once it has caught up at `seq`. */
export const caughtUp = (seq: number): Cursor => ({ seq, base: seq });

/** A cursor of ours, or undefined for anything else. */
function readCursor(cursor: string): Cursor | undefined {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(cursor)) return undefined;
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(fromBase64url(cursor));
  } catch {
    return undefined;
  }
  const match = CURSOR.exec(text);
  if (!match) return undefined;
  const read = { seq: Number(match[1]), base: Number(match[2]) };
  return cursorOf(read) === cursor ? read : undefined;
}

const ChangesQuery = v.object({
  cursor: v.optional(
    v.pipe(
      v.string(),
      v.check((raw) => readCursor(raw) !== undefined, NoteMessage.invalidCursor),
      v.description(
        "The `cursor` of the last answer; without it the feed starts from the beginning (every live note).",
      ),
    ),
  ),
  limit: v.optional(
    v.pipe(
      v.string(),
      v.check(
        (raw) => (safeInteger(raw) ?? 0) >= 1 && (safeInteger(raw) ?? 0) <= MAX_CHANGES_PAGE,
        `limit must be an integer from 1 to ${MAX_CHANGES_PAGE}`,
      ),
      v.description(
        `Changes per page, 1 to ${MAX_CHANGES_PAGE} (default ${MAX_CHANGES_PAGE}); a page is also cut at about ${LIST_CHUNK_BYTES / 1_000_000} MB of notes.`,
      ),
      v.transform(Number),
    ),
  ),
});

/** Bytes of a change besides its note's title and content (the change's JSON around the note, an ETag). */
const CHANGE_JSON_OVERHEAD = NOTE_JSON_OVERHEAD + 64;

/** The values of a page's statement: the cursor's `seq`, and at most how many changes. */
type PageValues = { after: number; limit: number };

/** The caller's clock and how far its tombstones were pruned, read in the page's batch (one transaction). */
const clockQuery = forCallerOf((db, _p: Placeholders<object>, caller) => {
  const owner = clockOwner(caller);
  return db
    .select({
      seq: clockValue(owner).as("seq"),
      prunedThrough: clockValue(owner, noteClocks.prunedThrough).as("prunedThrough"),
    })
    .from(sql`(SELECT 1)`);
});

/**
 * The notes shared with the caller that changed after `after`, in the caller's own sequence (shared_changes,
 * docs/sync.md): an upsert while the caller sees the note, a delete once it no longer does.
 */
function sharedChangesAfter(caller: NonNullable<NotesCaller>, after: SQL<number>): SQL {
  const noteSize = sql`(SELECT ${estimatedJsonBytes(CHANGE_JSON_OVERHEAD)} FROM ${notes} WHERE ${notes.id} = ${sharedChanges.noteId})`;
  return sql`UNION ALL
    SELECT CASE WHEN ${sharedChanges.endedAt} IS NULL THEN 'upsert' ELSE 'delete' END, ${sharedChanges.noteId}, ${sharedChanges.seq},
      CASE WHEN ${sharedChanges.endedAt} IS NULL THEN coalesce(${noteSize}, ${CHANGE_JSON_OVERHEAD}) ELSE ${CHANGE_JSON_OVERHEAD} END
    FROM ${sharedChanges} WHERE ${and(sharedChangesOf(caller.userId), gt(sharedChanges.seq, after))}`;
}

/**
 * One page of the caller's changes after `after`: at most `limit`, cut at LIST_CHUNK_BYTES of notes (at
 * least one), in sequence order, each row with the number of changes after `after` (`total`, at most
 * one more than `limit`: whether more follow). Its own notes and deletions, and for a caller the notes shared
 * with it, all numbered by its own clock. An upsert carries the note's JSON and its revision (its ETag, which
 * for a shared note is its owner's number, not its place in this feed). Compiled once per isolate for public
 * notes and for one caller's (forCallerOf).
 */
const pageQuery = forCallerOf((db, p: Placeholders<PageValues>, caller) => {
  const changes = sql`SELECT 'upsert' AS type, ${notes.id} AS id, ${notes.revision} AS seq,
      ${estimatedJsonBytes(CHANGE_JSON_OVERHEAD)} AS size
    FROM ${notes} WHERE ${and(clockedFor(caller), gt(notes.revision, p.after))}
    UNION ALL
    SELECT 'delete', ${noteTombstones.noteId}, ${noteTombstones.seq}, ${CHANGE_JSON_OVERHEAD}
    FROM ${noteTombstones} WHERE ${and(tombstonesOf(clockOwner(caller)), gt(noteTombstones.seq, p.after))}
    ${caller ? sharedChangesAfter(caller, p.after) : sql``}
    ORDER BY seq LIMIT ${p.limit} + 1`;
  return db
    .select({
      type: sql<"upsert" | "delete">`type`,
      id: sql<number>`id`,
      seq: sql<number>`seq`,
      note: sql<string | null>`note`,
      revision: sql<number | null>`revision`,
      total: sql<number>`total`,
    })
    .from(
      sql`(WITH changes AS (${changes}),
      sized AS (SELECT type, id, seq, row_number() OVER (ORDER BY seq) AS n, sum(size) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING) AS reach FROM changes)
      SELECT sized.type AS type, sized.id AS id, sized.seq AS seq,
        CASE WHEN sized.type = 'upsert' THEN ${noteJsonText} END AS note, ${notes.revision} AS revision,
        (SELECT count(*) FROM changes) AS total
      FROM sized LEFT JOIN ${notes} ON sized.type = 'upsert' AND ${notes.id} = sized.id
      WHERE n <= ${p.limit} AND (n = 1 OR reach <= ${LIST_CHUNK_BYTES}))`,
    )
    .orderBy(sql`seq`);
});

export const changesApp = new Hono<AppEnv>()
  // Private notes are personal data: not cached (public notes, as the contract has them, may be).
  .use(noStore((c) => c.var.config.notesAuth === "required"))
  .use(requireNotesAuth)
  .get(
    "/",
    describeRoute({
      ...notesOperation,
      summary: "Changes since a cursor (offline sync)",
      description:
        "What was committed to the notes after `cursor` (your own, and with NOTES_AUTH=required those shared with you: a share's start is an upsert, its end a delete), " +
        "in commit order, each note at most once per page in its latest state: " +
        '`{"type": "upsert", "note": …, "etag": …}` or `{"type": "delete", "id": …}`. Without `cursor`, every live note. ' +
        "Keep the answer's `cursor` and ask again with it; `has_more: true` means ask again at once. " +
        `Deletions are kept ${TOMBSTONES_KEPT_MS / DAY} days: an older cursor is a 410, and the client syncs again without one.`,
      responses: {
        "200": json("A page of changes", {
          type: "object",
          required: ["changes", "cursor", "has_more"],
          properties: {
            changes: {
              type: "array",
              items: {
                oneOf: [
                  {
                    type: "object",
                    required: ["type", "note", "etag"],
                    properties: {
                      type: { const: "upsert" },
                      note: ref("Note"),
                      etag: { type: "string", description: "The note's ETag" },
                    },
                  },
                  {
                    type: "object",
                    required: ["type", "id"],
                    properties: { type: { const: "delete" }, id: { type: "integer" } },
                  },
                ],
              },
            },
            cursor: { type: "string", description: "Opaque; send it back as `cursor`" },
            has_more: { type: "boolean", description: "More changes wait: ask again at once with `cursor`" },
          },
        }),
        "400": jsonError(
          "A malformed cursor or limit",
          NoteMessage.invalidCursor,
          `limit must be an integer from 1 to ${MAX_CHANGES_PAGE}`,
        ),
        "410": jsonError(
          "The cursor is older than the deletions kept, or not of this database: sync again without one",
          NoteMessage.cursorExpired,
        ),
        ...notesErrors,
      },
    }),
    queryParams(ChangesQuery),
    async (c) => {
      const { cursor, limit } = c.req.valid("query");
      const { db, caller } = c.var;
      const from = cursor === undefined ? undefined : readCursor(cursor)!;
      const now = Date.now();
      const page = { after: from?.seq ?? 0, limit: limit ?? MAX_CHANGES_PAGE };
      const found = await asCaller(db, caller, now, [
        clockQuery(db, caller, now, {}),
        pageQuery(db, caller, now, page),
      ]);
      if (!found) return notesUnauthorized(c);
      const [[clock], rows] = found;
      // Deletions the client may need are gone, or the cursor is from another database (or from before a
      // restore): either way this feed cannot tell the client what it missed.
      if (from && (from.base < clock!.prunedThrough || from.seq > clock!.seq || from.base > clock!.seq)) {
        return c.json({ error: NoteMessage.cursorExpired }, 410);
      }
      // An upsert always finds its note (a shared note's deletion ends its shares in the same statement); were
      // one ever missing, the client is told the note is gone rather than handed a change without a note.
      const changes = rows.map((row) =>
        row.type === "upsert" && row.note !== null && row.revision !== null
          ? `{"type":"upsert","note":${row.note},"etag":${JSON.stringify(etagOf(row.revision))}}`
          : `{"type":"delete","id":${row.id}}`,
      );
      const hasMore = (rows[0]?.total ?? 0) > rows.length;
      // The page and the clock were read in one transaction: a last page covers everything up to the clock.
      // A sync from scratch needs no deletion from before it began.
      const next = hasMore ? { seq: rows.at(-1)!.seq, base: from?.base ?? clock!.seq } : caughtUp(clock!.seq);
      const body = `{"changes":[${changes.join(",")}],"cursor":${JSON.stringify(cursorOf(next))},"has_more":${hasMore}}`;
      return jsonText<ChangesPage, 200>(c, body, 200);
    },
  );

// Any other method is a 405, as on every other path.
for (const [path, allow] of allowedMethods(changesApp.routes)) changesApp.all(path, methodNotAllowed(allow));
