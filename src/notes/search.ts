import { and, sql } from "drizzle-orm";
import { asCaller, forCallerOf } from "./runner";
import type { Placeholders } from "../db/compiled";
import { notes } from "./schema";
import type { AccessClaims } from "../lib/access-token";
import type { Database } from "../types";
import { ownedBy, type NotesCaller } from "./access";
import { LIST_CHUNK_BYTES, noteJsonText, noteSize } from "./sql";

/**
 * `GET /notes?q=…`: full-text search over titles and contents with SQLite's FTS5 (the `notes_fts` index
 * of migration 0007, kept exact by triggers). Rationale: docs/notes-idempotency-search.md; measurements: docs/performance.md.
 */

/** A search page without `limit` holds this many notes at most. */
export const DEFAULT_SEARCH_LIMIT = 20;

/**
 * The FTS5 MATCH expression for what a user typed, built so that nothing typed is ever FTS5 syntax.
 * The text is cut into terms: a double quote opens a phrase that runs to the next double quote (or to the
 * end), anything else is a word between white space. Every term goes to FTS5 as a double-quoted string
 * (a quote inside doubled, though the cutting leaves none), so `OR`, `NEAR(`, `-`, `*`, `:` and `^` are
 * only text; FTS5 splits each string into words with the index's own tokenizer, and a string without a
 * word in it (`-`, `***`) matches nothing and is left out of the AND. The terms are ANDed; the last one,
 * if it is a word, matches as a prefix (`budg` finds Budget), for search as you type. Half of a UTF-16
 * surrogate pair is not text: it becomes U+FFFD, which matches nothing. Control characters separate words
 * in the index anyway; they become spaces, since FTS5 would take a NUL for the end of the expression.
 */
export function matchExpression(q: string): string {
  const terms = [
    ...q
      .toWellFormed()
      .replace(/\p{Cc}/gu, " ")
      .matchAll(/"([^"]*)"?|[^\s"]+/gu),
  ];
  // Nothing to look for (only white space and control characters): the empty phrase, which matches nothing.
  if (terms.length === 0) return '""';
  return terms
    .map((term, i) => {
      const text = term[1] ?? term[0];
      const prefix = i === terms.length - 1 && term[1] === undefined ? "*" : "";
      return `"${text.replaceAll('"', '""')}"${prefix}`;
    })
    .join(" ");
}

/**
 * The words of a search as the index counts them: runs of letters and digits (with their combining
 * marks), wherever they stand, quoted or not. What bounds a search's cost: FTS5 reads one list of
 * matches per word, and a phrase is as many lists as it has words.
 */
export function countWords(q: string): number {
  return q.match(/[\p{L}\p{N}\p{M}]+/gu)?.length ?? 0;
}

/**
 * One search page in one statement: the matching notes, those that match in their title first, then the
 * newest first, `limit` of them after `offset`, and one more to tell whether another page follows. Like
 * the list, a page is also cut by bytes: only the notes whose running size (estimated from stored lengths,
 * as the list does) stays within `budget` carry their JSON (the first always does), so a page of large
 * notes stays bounded in memory and in the time it holds the database. Rows are in rank order; `json` is
 * null for those left to the next page.
 *
 * The rank is computed from each matching row alone, never from statistics of the whole index (bm25 weighs
 * a word by how many notes hold it, every account's notes: the order of one's own results then told
 * whether a word occurred in anyone else's). `highlight()` marks the matches in the title, from the row's
 * own text: a title it changes holds one.
 *
 * The FTS index drives the join (CROSS JOIN keeps SQLite from starting at the owner's notes instead), and
 * the owner is a filter on the matches: with NOTES_AUTH=required the caller's notes only.
 */
function searchOf(db: Database, p: Placeholders<SearchValues>, caller: NotesCaller) {
  const ranked = sql`SELECT ${notes.id} AS id, highlight(notes_fts, 0, '[', ']') = ${notes.title} AS title_miss, ${noteSize} AS size
    FROM notes_fts CROSS JOIN ${notes} ON ${notes.id} = notes_fts.rowid
    WHERE ${and(sql`notes_fts MATCH ${p.match}`, ownedBy(caller))}
    ORDER BY title_miss, id DESC LIMIT ${p.limit} + 1 OFFSET ${p.offset}`;
  const page = sql`(
    SELECT id, row_number() OVER w AS n, sum(size) OVER w AS reach FROM (${ranked})
    WINDOW w AS (ORDER BY title_miss, id DESC ROWS UNBOUNDED PRECEDING)
  ) AS page CROSS JOIN ${notes} ON ${notes.id} = page.id`;
  return db
    .select({
      n: sql<number>`page.n`.as("n"),
      json: sql<
        string | null
      >`CASE WHEN page.n <= ${p.limit} AND (page.n = 1 OR page.reach <= ${p.budget}) THEN ${noteJsonText} END`.as(
        "json",
      ),
    })
    .from(page)
    .orderBy(sql`page.n`);
}

/** The values of a search page's statement: the MATCH expression, the page and its byte budget. */
type SearchValues = { match: string; limit: number; offset: number; budget: number };

/** Compiled once per isolate for public notes and for one owner's (db/compiled.ts). */
const searchQuery = forCallerOf((db, p: Placeholders<SearchValues>, caller) => searchOf(db, p, caller));

/** A search page: the JSON array, and the `offset` of the next page when there is one. */
export interface SearchPage {
  body: string;
  nextOffset: number | undefined;
}

/**
 * The caller's notes matching `q`, title matches first, then the newest; undefined when the caller's session is not
 * live (checked in the same round trip, see asCaller).
 */
export async function searchNotes(
  db: Database,
  caller: AccessClaims | undefined,
  now: number,
  q: string,
  limit: number,
  offset: number,
): Promise<SearchPage | undefined> {
  const query = searchQuery(db, caller, now, { match: matchExpression(q), limit, offset, budget: LIST_CHUNK_BYTES });
  const rows = await asCaller(db, caller, now, query);
  if (!rows) return undefined;
  const items = rows.flatMap((row) => (row.json === null ? [] : [row.json]));
  return { body: `[${items.join(",")}]`, nextOffset: rows.length > items.length ? offset + items.length : undefined };
}
