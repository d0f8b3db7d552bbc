import { isNotNull, isNull } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
// A foreign key across areas, the one import of another area's table a schema file may make (docs/design.md, "Seams").
import { users } from "../../auth/schema";
import { notes } from "../schema";

/** The sharing tables (docs/sharing.md). Only src/notes/ names them. */

/** The roles a share gives: a viewer reads the note and its attachments, an editor also changes them. */
export const SHARE_ROLES = ["viewer", "editor"] as const;
export type ShareRole = (typeof SHARE_ROLES)[number];

/**
 * A note's public links: whoever holds the token reads the note's title and content, without an account. Only
 * the token's SHA-256 is stored (the token is shown once, when the link is made). A link goes with its note
 * (ON DELETE CASCADE), and the note goes with its owner's account.
 */
export const noteLinks = sqliteTable(
  "note_links",
  {
    // 128 random bits, base64url: the link's id in the API (never the token).
    id: text("id").primaryKey(),
    noteId: integer("note_id")
      .notNull()
      .references(() => notes.id, { onDelete: "cascade" }),
    // SHA-256 (hex) of the token.
    tokenHash: text("token_hash").notNull().unique(),
    // Milliseconds since the epoch.
    createdAt: integer("created_at").notNull(),
  },
  (table) => [index("note_links_note_id_created_at").on(table.noteId, table.createdAt)],
);

/**
 * A note shared with an address, as a viewer or an editor. It reaches the account that has verified the address:
 * `grantee_id` is set when the share is made, if such an account exists, or by a trigger on `users` the moment an
 * account verifies it (drizzle/0026_sharing.sql), and stays with that account. Triggers write the share's start and end into
 * the grantee's changes feed (`shared_changes`). A share goes with its note and with its grantee's account.
 */
export const noteShares = sqliteTable(
  "note_shares",
  {
    // 128 random bits, base64url.
    id: text("id").primaryKey(),
    noteId: integer("note_id")
      .notNull()
      .references(() => notes.id, { onDelete: "cascade" }),
    // Normalized as every address is (trimmed, NFC, lowercased).
    email: text("email").notNull(),
    role: text("role", { enum: SHARE_ROLES }).notNull(),
    // Milliseconds since the epoch.
    createdAt: integer("created_at").notNull(),
    // The account the share reached; null while no account has verified the address.
    granteeId: integer("grantee_id").references(() => users.id, { onDelete: "cascade" }),
  },
  (table) => [
    // One share per note and address, decided by the index under any burst (a 409).
    uniqueIndex("note_shares_note_id_email").on(table.noteId, table.email),
    // Every access check of a grantee, and the list of notes shared with it.
    index("note_shares_grantee_id_note_id").on(table.granteeId, table.noteId).where(isNotNull(table.granteeId)),
    // The shares an account's verification binds.
    index("note_shares_unbound_email").on(table.email).where(isNull(table.granteeId)),
  ],
);

/**
 * The changes feed of the notes shared with a reader (docs/sync.md, "Notes shared with you"): a row per reader and
 * note, numbered by the reader's own clock (`note_clocks`) at the last change the reader can see, written by
 * triggers in the statement that changes the note or the share. `ended_at` set: the reader no longer sees the
 * note (a tombstone, pruned with the reader's others after TOMBSTONES_KEPT_MS).
 */
export const sharedChanges = sqliteTable(
  "shared_changes",
  {
    reader: integer("reader").notNull(),
    noteId: integer("note_id").notNull(),
    seq: integer("seq").notNull(),
    // Milliseconds since the epoch; null while the reader sees the note.
    endedAt: integer("ended_at"),
  },
  (table) => [
    primaryKey({ columns: [table.reader, table.noteId] }),
    index("shared_changes_reader_seq").on(table.reader, table.seq),
    index("shared_changes_ended_at").on(table.endedAt).where(isNotNull(table.endedAt)),
  ],
);

/**
 * The addresses each owner had the service mail a share to, each with when it was first mailed in the last day:
 * the claim that holds NEW_SHARE_ADDRESSES_PER_DAY, made in the share's own statement. The cron removes rows older
 * than a day.
 */
export const shareMailAddresses = sqliteTable(
  "share_mail_addresses",
  {
    ownerId: integer("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    email: text("email").notNull(),
    // Milliseconds since the epoch.
    mailedAt: integer("mailed_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.ownerId, table.email] }),
    index("share_mail_addresses_owner_id_mailed_at").on(table.ownerId, table.mailedAt),
    index("share_mail_addresses_mailed_at").on(table.mailedAt),
  ],
);
