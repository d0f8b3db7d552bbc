import { sql, type SQL } from "drizzle-orm";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { forCallerOf } from "./runner";
import type { Placeholders } from "../db/compiled";
import { noteClocks } from "./schema";
import { clockOwner, type NotesCaller } from "./access";
import { NoteMessage } from "./messages";
import { clockValue } from "./sql";

/**
 * Revisions and conditional requests (RFC 9110 §8.8.3, §13). A note's revision is its owner's sequence
 * number at its last change (see note_clocks), so its ETag is `"<revision>"`: strong, since one revision is
 * one exact title and content. Clients treat it as opaque.
 */

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
    if (!tag)
      throw new HTTPException(400, {
        message: name === "If-Match" ? NoteMessage.invalidIfMatch : NoteMessage.invalidIfNoneMatch,
      });
    tags.push(tag[2]!);
  }
  return { any: false, tags };
}

/** The precondition of a header on a note: a tag we never made (another server's, or junk) matches nothing. */
function readPrecondition(c: Context, name: "If-Match" | "If-None-Match"): Precondition | undefined {
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
 * The version of everything a caller's lists cover (its own notes, and those shared with it), as a scalar SQL
 * expression: the caller's clock, which the changes of the notes shared with it move on too; with public notes
 * every clock together (the public list shows every note, whoever wrote it). It moves on with every create,
 * change and delete, so a list's ETag made of it changes whenever the list may have.
 */
export function listVersion(caller: NotesCaller): SQL<number> {
  return caller
    ? clockValue(clockOwner(caller))
    : sql<number>`coalesce((SELECT sum(${noteClocks.seq}) FROM ${noteClocks}), 0)`;
}

/** The version alone (a poll: the list's ETag without reading a note), compiled once per isolate. */
export const readListVersion = forCallerOf((db, _p: Placeholders<object>, caller) =>
  db.select({ version: listVersion(caller).as("version") }).from(sql`(SELECT 1)`),
);

/** The ETag of a list (or a page of it: `limit` and `after`; of the notes shared with the caller) at `version`. */
export function listETag(
  version: number,
  limit: number | undefined,
  after: number | undefined,
  shared = false,
): string {
  return `"${shared ? "shared" : "list"}-${version}-${limit ?? "all"}-${after ?? "start"}"`;
}
