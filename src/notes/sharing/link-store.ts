import { and, eq, lt, sql, type SQL } from "drizzle-orm";
import type { CallerValues } from "../../auth/caller";
import { compile, rowsOf, type Placeholders } from "../../db/compiled";
import type { AccessClaims } from "../../lib/access-token";
import type { Database } from "../../types";
import { managedBy, roleOf, visibleTo } from "../access";
import { asCaller, forCallerOnly } from "../runner";
import { notes } from "../schema";
import { isoTimestamp } from "../sql";
import { MAX_LINKS_PER_NOTE } from "./policy";
import { noteLinks } from "./schema";

/**
 * Every statement of public links, and the only place their SQL lives. Who may make, list and revoke them is
 * access.ts's (only the note's owner, while its session is live); the statements are compiled once per isolate and
 * run in one round trip with the session check (asCaller). The token is never stored, only its SHA-256.
 */

/** Live links of note `noteId`. */
const linksOn = (noteId: SQL<number>) =>
  sql<number>`(SELECT count(*) FROM ${noteLinks} WHERE ${eq(noteLinks.noteId, noteId)})`;

type MakeValues = { id: string; noteId: number; tokenHash: string };

/**
 * One statement makes the link, only while the caller owns the note and it has fewer than MAX_LINKS_PER_NOTE: D1
 * runs one write at a time, so a burst of requests never makes more.
 */
const make = forCallerOnly((db, p: Placeholders<MakeValues & CallerValues>) =>
  db
    .insert(noteLinks)
    .select(
      // Every column, in the table's order (drizzle's rule for INSERT … SELECT).
      db
        .select({
          id: sql<string>`${p.id}`.as("id"),
          noteId: notes.id,
          tokenHash: sql<string>`${p.tokenHash}`.as("token_hash"),
          createdAt: sql<number>`${p.now}`.as("created_at"),
        })
        .from(notes)
        .where(and(managedBy(p, p.noteId), lt(linksOn(p.noteId), MAX_LINKS_PER_NOTE))),
    )
    .returning({ id: noteLinks.id }),
);

/** Makes a link: true when made, false when refused (readRole says why), undefined when the session is not live. */
export async function makeLink(db: Database, caller: AccessClaims, now: number, values: MakeValues) {
  const rows = await asCaller(db, caller, now, make(db, caller, now, values));
  return rows && rows.length > 0;
}

/** A link as its list shows it, keyed as the answer is. */
export interface StoredLink {
  id: string;
  created_at: number;
}

const listOf = forCallerOnly((db, p: Placeholders<{ noteId: number } & CallerValues>) =>
  db
    .select({ role: roleOf(p).as("role"), id: noteLinks.id, created_at: noteLinks.createdAt })
    .from(notes)
    .leftJoin(noteLinks, eq(noteLinks.noteId, notes.id))
    .where(and(eq(notes.id, p.noteId), visibleTo(p)))
    .orderBy(noteLinks.createdAt, noteLinks.id),
);

/**
 * The live links of note `noteId` with what the caller is to it: `role` null when the caller may not see the note
 * (undefined: session not live). Only an owner is to be shown them.
 */
export async function listLinks(db: Database, caller: AccessClaims, now: number, noteId: number) {
  const rows = await asCaller(db, caller, now, listOf(db, caller, now, { noteId }));
  if (!rows) return undefined;
  const links = rows.flatMap((row) => (row.id === null ? [] : [{ id: row.id, created_at: row.created_at! }]));
  return { role: rows[0]?.role ?? null, links };
}

type OneValues = { id: string; noteId: number };
const revoke = forCallerOnly((db, p: Placeholders<OneValues & CallerValues>) =>
  db
    .delete(noteLinks)
    .where(
      and(
        eq(noteLinks.id, p.id),
        eq(noteLinks.noteId, p.noteId),
        sql`EXISTS (SELECT 1 FROM ${notes} WHERE ${managedBy(p, p.noteId)})`,
      ),
    )
    .returning({ id: noteLinks.id }),
);

/** Revokes link `id` of note `noteId`, at once: whether it was there (undefined: session not live). */
export async function revokeLink(db: Database, caller: AccessClaims, now: number, values: OneValues) {
  const rows = await asCaller(db, caller, now, revoke(db, caller, now, values));
  return rows && rows.length > 0;
}

/** A public link's note as JSON (SharedNoteJson), written by SQLite like every note answer. */
const sharedNoteJson = sql<string>`json_object('title', ${notes.title}, 'content', ${notes.content},
  'created_at', ${isoTimestamp(notes.createdAt)}, 'updated_at', ${isoTimestamp(notes.updatedAt)})`;

const byToken = compile((db, p: Placeholders<{ tokenHash: string }>) =>
  db
    .select({ json: sharedNoteJson.as("json") })
    .from(noteLinks)
    .innerJoin(notes, eq(notes.id, noteLinks.noteId))
    .where(eq(noteLinks.tokenHash, p.tokenHash)),
);

/**
 * The note a link's token (as its hash) opens, as JSON, or undefined: unknown, revoked, or its note (or with it
 * the owner's account) deleted. A link lives exactly as long as its row.
 */
export async function sharedNote(db: Database, tokenHash: string): Promise<string | undefined> {
  const [row] = await rowsOf(byToken(db.$client, { tokenHash }));
  return row?.json;
}
