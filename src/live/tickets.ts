import { and, eq, gt, lte, sql } from "drizzle-orm";
import { liveSession, liveSessionOf } from "../auth/caller";
import { liveTickets } from "./schema";
import type { AccessClaims } from "../lib/access-token";
import { sha256Hex } from "../lib/crypto";
import { base64url } from "../lib/encoding";
import type { Database } from "../types";
import { TICKET_TTL_MS } from "./protocol";
import { markWatched } from "./watchers";

/**
 * Tickets for the live-updates socket, the only SQL of `live_tickets`. A browser cannot put a Bearer token
 * on a WebSocket, so it trades its token for a ticket (POST /changes/live-ticket) and opens the socket with
 * it in the URL. A URL ends up in logs and histories, hence: 128 random bits, stored as their SHA-256 only,
 * bound to the session and user that asked, good for TICKET_TTL_MS, and used up by the one statement that
 * claims it, before anything else happens to the upgrade.
 */

/** A ticket as we hand them out: 16 random bytes, base64url. Anything else is no ticket of ours. */
export const TICKET_FORMAT = /^[A-Za-z0-9_-]{22}$/;

/** A new ticket, and what is stored of it. */
export async function newTicket(): Promise<{ ticket: string; hash: string }> {
  const ticket = base64url(crypto.getRandomValues(new Uint8Array(16)));
  return { ticket, hash: await hashOf(ticket) };
}

/** What is stored of a ticket, and what a presented one is looked up by. */
export const hashOf = (ticket: string): Promise<string> => sha256Hex(ticket);

/**
 * Stores the ticket for the caller's session, in one transaction with the mark that the account is watched
 * (watchers.ts), both selecting the session: nothing is stored once the session has ended. False then (a 401).
 */
export async function issueTicket(db: Database, caller: AccessClaims, hash: string, now: number): Promise<boolean> {
  const session = liveSessionOf(db, caller, now);
  const [stored] = await db.batch([
    db
      .insert(liveTickets)
      .select(
        // Every column, in the table's order (drizzle's rule for INSERT … SELECT).
        db
          .select({
            tokenHash: sql<string>`${hash}`.as("token_hash"),
            sessionId: sql<string>`${caller.sessionId}`.as("session_id"),
            userId: session.userId,
            expiresAt: sql<number>`${now + TICKET_TTL_MS}`.as("expires_at"),
          })
          .from(session),
      )
      .returning({ tokenHash: liveTickets.tokenHash }),
    markWatched(db, caller, now),
  ]);
  return stored.length > 0;
}

/** Whose socket a claimed ticket opens. */
export interface Claimed {
  userId: number;
  sessionId: string;
}

/**
 * Claims the ticket: ONE conditional DELETE that answers a row only for a ticket that exists, has not
 * expired, and whose session is still live, all in the same statement. Of any number of requests with one
 * ticket, exactly one gets the row; a used, unknown or expired ticket, or one whose session has ended, gets
 * nothing (a 401 before any upgrade).
 */
export async function claimTicket(db: Database, hash: string, now: number): Promise<Claimed | undefined> {
  const holder = { sessionId: sql<string>`${liveTickets.sessionId}`, userId: sql<number>`${liveTickets.userId}` };
  const [claimed] = await db
    .delete(liveTickets)
    .where(and(eq(liveTickets.tokenHash, hash), gt(liveTickets.expiresAt, now), liveSession(holder, now)))
    .returning({ userId: liveTickets.userId, sessionId: liveTickets.sessionId });
  return claimed;
}

/** The live area's share of the hourly clean-up (scheduled.ts): tickets nobody used. */
export function liveCleanUp(db: Database, now: number) {
  return {
    expiredLiveTickets: db
      .delete(liveTickets)
      .where(lte(liveTickets.expiresAt, now))
      .returning({ hash: liveTickets.tokenHash }),
  };
}
