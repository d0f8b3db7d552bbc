import { isNull } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
// A foreign key across areas, the one import of another area's table a schema file may make (docs/design.md, "Seams").
import { users } from "../auth/schema";

/** The notes area's tables. Only src/notes/ names them. */

export const notes = sqliteTable(
  "notes",
  {
    // AUTOINCREMENT so the id of a deleted note is never handed out again.
    id: integer("id").primaryKey({ autoIncrement: true }),
    title: text("title").notNull(),
    content: text("content").notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    // The author, when NOTES_AUTH=required; null for notes created while notes were public.
    userId: integer("user_id").references(() => users.id),
    // The owner's sequence number (note_clocks) at the note's last change: its ETag, and its place in the
    // changes feed. Set by the statement that writes the note; triggers move the owner's clock on.
    revision: integer("revision").notNull().default(0),
    // When the title or the content last changed (created_at until then), set by the statement that changes
    // them; what a public link shows as `updated_at` (docs/sharing.md). An attachment does not move it.
    updatedAt: integer("updated_at").notNull().default(0),
  },
  (table) => [
    index("notes_user_id_id").on(table.userId, table.id),
    index("notes_user_id_revision").on(table.userId, table.revision),
  ],
);

/**
 * One sequence per owner of notes (a user id with NOTES_AUTH=required, NOTE_OWNER_PUBLIC for public
 * notes): moved on by the triggers of drizzle/0011 in the very statement that creates, changes or deletes
 * a note, so it follows commit order (D1 runs one write at a time). `prunedThrough`: the highest sequence
 * number whose tombstone the cron has removed; a changes cursor below it is too old.
 */
export const noteClocks = sqliteTable("note_clocks", {
  owner: integer("owner").primaryKey(),
  seq: integer("seq").notNull().default(0),
  prunedThrough: integer("pruned_through").notNull().default(0),
});

/** A deleted note, for the changes feed: written by a trigger in the statement that deletes it. */
export const noteTombstones = sqliteTable(
  "note_tombstones",
  {
    owner: integer("owner").notNull(),
    seq: integer("seq").notNull(),
    noteId: integer("note_id").notNull(),
    deletedAt: integer("deleted_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.owner, table.seq] }),
    index("note_tombstones_deleted_at").on(table.deletedAt),
  ],
);

/**
 * The `Idempotency-Key` of each `POST /notes` that sent one (see notes/idempotency.ts), for 24 hours: the
 * request it was first used with (as a hash) and the exact answer, replayed to a repeat. A key is claimed,
 * its note created and its answer stored in one transaction, so no row is ever seen half done.
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    id: integer("id").primaryKey(),
    // The caller the key belongs to with NOTES_AUTH=required; null for the one scope of public notes.
    // The keys of a deleted account go with it: a later account given the same id finds none of them.
    userId: integer("user_id").references(() => users.id, { onDelete: "cascade" }),
    key: text("key").notNull(),
    // SHA-256 (hex) of the request that first used the key: a repeat with another body is refused.
    requestHash: text("request_hash").notNull(),
    // Random per request: tells the request that claimed the key from the ones that found it claimed.
    claim: text("claim").notNull(),
    // The 201's body, byte for byte; null only inside the claiming transaction.
    response: text("response"),
    // The note's revision when it was created: the ETag of the stored answer, replayed with it.
    revision: integer("revision"),
    // Milliseconds since the epoch; the key expires 24 hours later.
    createdAt: integer("created_at").notNull(),
  },
  (table) => [
    // One key per caller, and one per key among public notes (NULLs are never equal in a unique index).
    uniqueIndex("idempotency_keys_user_id_key").on(table.userId, table.key),
    uniqueIndex("idempotency_keys_public_key").on(table.key).where(isNull(table.userId)),
    index("idempotency_keys_created_at").on(table.createdAt),
  ],
);

export type Note = typeof notes.$inferSelect;
