import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
// A foreign key across areas, the one import of another area's table a schema file may make (docs/design.md, "Seams").
import { sessions, users } from "../auth/schema";

/** The live-updates area's tables. Only src/live/ names them. */

/**
 * A ticket that opens one live-updates WebSocket (src/live/tickets.ts): a browser cannot send a Bearer token
 * on a WebSocket, so it asks for a ticket with one and opens the socket with the ticket. Stored as the
 * SHA-256 of the ticket only, bound to the session and user that asked, for at most a minute; used up by
 * the one statement that claims it. It goes with its session (ON DELETE CASCADE): a ticket of a session
 * that ended cannot be claimed.
 */
export const liveTickets = sqliteTable(
  "live_tickets",
  {
    // SHA-256 (hex) of the ticket.
    tokenHash: text("token_hash").primaryKey(),
    sessionId: text("session_id")
      .notNull()
      .references(() => sessions.id, { onDelete: "cascade" }),
    // The session's user (its sessions go with the user, and the tickets with them).
    userId: integer("user_id").notNull(),
    // Milliseconds since the epoch.
    expiresAt: integer("expires_at").notNull(),
  },
  // The session's index serves the cascade of every session that ends; expires_at, the hourly clean-up.
  (table) => [
    index("live_tickets_session_id").on(table.sessionId),
    index("live_tickets_expires_at").on(table.expiresAt),
  ],
);

/**
 * The accounts whose notes someone may be watching (src/live/watchers.ts): a row from the moment a live ticket
 * is handed out until the account's hub finds it has no socket and no ticket pending. A note write reads it in
 * its own batch and pokes the hub only when it is there, so an account without sockets costs its writes no
 * Durable Object request. `since`: when the last ticket was handed out (a hub removes only older rows).
 */
export const liveWatchers = sqliteTable("live_watchers", {
  userId: integer("user_id")
    .primaryKey()
    .references(() => users.id, { onDelete: "cascade" }),
  since: integer("since").notNull(),
});
