import { isNull } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
// A foreign key across areas, the one import of another area's table a schema file may make (docs/design.md, "Seams").
import { users } from "../../auth/schema";
import { notes } from "../schema";

/** The attachments' tables (docs/attachments.md). Only src/notes/ names them. */

/**
 * One row per attachment, made when an upload is reserved: its bytes count against the account's quota and
 * the note's count from then on. `stored_at` (with the type and hash) is set once its R2 object is complete;
 * until then nobody sees it. The R2 object's key is the row's id. Deleting a row, however it happens (a
 * route, the note's or the account's deletion, the cron), queues its key in `attachment_removals` (a
 * trigger, drizzle/0020).
 */
export const attachments = sqliteTable(
  "attachments",
  {
    // 128 random bits, base64url: the id in the API and the R2 object's key.
    id: text("id").primaryKey(),
    noteId: integer("note_id")
      .notNull()
      .references(() => notes.id, { onDelete: "cascade" }),
    // The note's owner, who uploaded it: whose quota it counts against.
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    filename: text("filename").notNull(),
    // Bytes, from the upload's Content-Length (the body had exactly these).
    size: integer("size").notNull(),
    // Decided by sniffing the bytes; null until the upload completes.
    contentType: text("content_type"),
    // SHA-256 of the bytes, hex; null until the upload completes.
    sha256: text("sha256"),
    // Milliseconds since the epoch: when the upload was reserved.
    createdAt: integer("created_at").notNull(),
    // When the R2 object was complete; null while the upload is under way.
    storedAt: integer("stored_at"),
  },
  (table) => [
    index("attachments_note_id_created_at").on(table.noteId, table.createdAt),
    // Covers the sum of an account's sizes (the quota) without reading a row.
    index("attachments_user_id_size").on(table.userId, table.size),
    index("attachments_uploading").on(table.createdAt).where(isNull(table.storedAt)),
  ],
);

/**
 * R2 objects to delete: the key of every deleted attachment row, written by a trigger in the statement that
 * deletes it, so no deletion path can forget its object. The cron deletes the objects and, once a key is
 * older than REMOVALS_KEPT_MS, its row here.
 */
export const attachmentRemovals = sqliteTable(
  "attachment_removals",
  {
    key: text("key").primaryKey(),
    // Milliseconds since the epoch.
    queuedAt: integer("queued_at").notNull(),
  },
  (table) => [index("attachment_removals_queued_at").on(table.queuedAt)],
);
