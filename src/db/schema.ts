import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

export const users = sqliteTable("users", {
  // INTEGER PRIMARY KEY without AUTOINCREMENT: SQLite hands out max(id) + 1, and users are never
  // deleted, so the id equals the number of users at creation, as the spec says.
  id: integer("id").primaryKey(),
  // Stored trimmed and lowercased; the unique index decides concurrent registrations.
  email: text("email").notNull().unique(),
  password: text("password").notNull(),
  isVerified: integer("isVerified", { mode: "boolean" }).notNull().default(false),
  verificationToken: text("verificationToken"),
  tokenExpiry: integer("tokenExpiry"),
  // Wrong codes against the current code; at MAX_CODE_ATTEMPTS the code is void.
  failedCodeAttempts: integer("failedCodeAttempts").notNull().default(0),
  // Verification mails (registration and resends): the last one, and a fixed one-hour window.
  lastMailAt: integer("lastMailAt").notNull().default(0),
  mailWindowStart: integer("mailWindowStart").notNull().default(0),
  mailsInWindow: integer("mailsInWindow").notNull().default(0),
  // Failed verifications across codes, in a fixed one-hour window.
  verifyWindowStart: integer("verifyWindowStart").notNull().default(0),
  verifyFailures: integer("verifyFailures").notNull().default(0),
});

/**
 * Consecutive failed logins per e-mail address, registered or not: unknown addresses are counted and
 * locked like real ones, so the answers do not tell which addresses have accounts. A successful login
 * deletes the row.
 */
export const loginFailures = sqliteTable("login_failures", {
  email: text("email").primaryKey(),
  failures: integer("failures").notNull().default(0),
  lockedUntil: integer("lockedUntil").notNull().default(0),
});

export const notes = sqliteTable("notes", {
  // AUTOINCREMENT so the id of a deleted note is never handed out again.
  id: integer("id").primaryKey({ autoIncrement: true }),
  title: text("title").notNull(),
  content: text("content").notNull(),
  createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  // The author, when NOTES_AUTH=required; null for notes created while notes were public.
  userId: integer("user_id").references(() => users.id),
}, (table) => [index("notes_user_id_id").on(table.userId, table.id)]);

export type User = typeof users.$inferSelect;
export type Note = typeof notes.$inferSelect;
