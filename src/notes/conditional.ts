import { sql, type SQL } from "drizzle-orm";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { forCallerOf } from "../auth/caller";
import type { Placeholders } from "../db/compiled";
import { noteClocks, notes } from "../db/schema";
import type { AccessClaims } from "../lib/access-token";
import { NoteMessage } from "./messages";

/**
 * Revisions and conditional requests (RFC 9110 §8.8.3, §13). A note's revision is its owner's sequence
 * number at its last change (see note_clocks), so its ETag is `"<revision>"`: strong, since one revision is
 * one exact title and content. Clients treat it as opaque.
 */

/** The owner of notes in the clocks when notes are public (user ids start at 1). */
export const PUBLIC_OWNER = 0;

/** The clock a caller's notes are numbered by: the caller's, or the public notes'. */
export function ownerOf(caller: AccessClaims | undefined): number {
  return caller?.userId ?? PUBLIC_OWNER;
}

/** The revision a write gives a note of `owner` (a number, or a column of the row being written). */
export function nextRevision(owner: number | SQL): SQL {
  return sql`(coalesce((SELECT ${noteClocks.seq} FROM ${noteClocks} WHERE ${noteClocks.owner} = ${owner}), 0) + 1)`;
}

/** The same, for the note row an UPDATE is writing: numbered by its own owner's clock. */
export const nextRevisionOfRow = () => nextRevision(sql`coalesce(${notes.userId}, ${PUBLIC_OWNER})`);

export function etagOf(revision: number): string {
  return `"${revision}"`;
}

/** The entity-tags of an If-Match or If-None-Match header: any (`*`), or these opaque tags (without W/). */
export type ETags = { any: true } | { any: false; tags: string[] };

/** What a precondition on a note asks for: any current note (`*`), or one of these revisions. */
export type Precondition = { any: true } | { any: false; revisions: number[] };

/** One entity-tag (RFC 9110 §8.8.3): optionally weak, then a quoted string without quotes or controls. */
const ENTITY_TAG = /^(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"$/;
/** Our notes' tags: a revision. */
const REVISION = /^[1-9][0-9]{0,15}$/;

/**
 * The header's entity-tags, or undefined when the header is absent. A weak tag `W/"x"` is taken as the
 * strong `"x"` it was made from: our tags are strong, and Cloudflare's edge weakens them when it
 * compresses an answer, so a client may hand one back (docs/sync.md). A header that is not `*` or a list
 * of entity-tags is a 400.
 */
export function readETags(c: Context, name: "If-Match" | "If-None-Match"): ETags | undefined {
  const header = c.req.header(name);
  if (header === undefined) return undefined;
  if (header.trim() === "*") return { any: true };
  const tags: string[] = [];
  for (const part of header.split(",")) {
    const tag = ENTITY_TAG.exec(part.trim());
    if (!tag) throw new HTTPException(400, { message: name === "If-Match" ? NoteMessage.invalidIfMatch : NoteMessage.invalidIfNoneMatch });
    tags.push(tag[2]!);
  }
  return { any: false, tags };
}

/** The precondition of a header on a note: a tag we never made (another server's, or junk) matches nothing. */
export function readPrecondition(c: Context, name: "If-Match" | "If-None-Match"): Precondition | undefined {
  const etags = readETags(c, name);
  if (!etags || etags.any) return etags;
  return { any: false, revisions: etags.tags.filter((tag) => REVISION.test(tag)).map(Number) };
}

/** Whether `etag` (as we send it, quoted) is among the header's tags. */
export function etagListed(etags: ETags, etag: string): boolean {
  return etags.any || etags.tags.includes(etag.slice(1, -1));
}

/** Whether a note at `revision` satisfies the precondition. */
export function matches(precondition: Precondition, revision: number): boolean {
  return precondition.any || precondition.revisions.includes(revision);
}

/**
 * The SQL condition of a conditional write: the note's revision is one of those asked for (`revisions`, a
 * JSON array, see revisionsOf), or any revision (null). One statement for any number of tags.
 */
export function revisionMatches(revisions: SQL<string | null>): SQL {
  return sql`(${revisions} IS NULL OR ${notes.revision} IN (SELECT value FROM json_each(${revisions})))`;
}

/** The `revisions` value of a precondition: null for none or `*`, else its revisions (none: matches nothing). */
export function revisionsOf(precondition: Precondition | undefined): string | null {
  return !precondition || precondition.any ? null : JSON.stringify(precondition.revisions);
}

/**
 * The If-Match of a PATCH or DELETE: undefined when absent, unless NOTES_REQUIRE_IF_MATCH makes it
 * mandatory (428).
 */
export function writePrecondition(c: Context, required: boolean): Precondition | undefined {
  const precondition = readPrecondition(c, "If-Match");
  if (!precondition && required) throw new HTTPException(428, { message: NoteMessage.ifMatchRequired });
  return precondition;
}

/**
 * The version of everything a caller's list covers, as a scalar SQL expression: the owner's clock; with
 * public notes every clock together (the public list shows every note, whoever wrote it). It moves on with
 * every create, change and delete, so a list's ETag made of it changes whenever the list may have.
 */
export function listVersion(owner: number | SQL<number> | undefined): SQL<number> {
  return owner !== undefined
    ? sql<number>`coalesce((SELECT ${noteClocks.seq} FROM ${noteClocks} WHERE ${noteClocks.owner} = ${owner}), 0)`
    : sql<number>`coalesce((SELECT sum(${noteClocks.seq}) FROM ${noteClocks}), 0)`;
}

/** The version alone (a poll: the list's ETag without reading a note), compiled once per isolate. */
export const readListVersion = forCallerOf((db, _p: Placeholders<object>, caller) =>
  db.select({ version: listVersion(caller?.userId).as("version") }).from(sql`(SELECT 1)`),
);

/** The ETag of a list (or a page of it: `limit` and `after`) at `version`. */
export function listETag(version: number, limit: number | undefined, after: number | undefined): string {
  return `"list-${version}-${limit ?? "all"}-${after ?? "start"}"`;
}
