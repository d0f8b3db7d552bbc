import { and, eq, lte, sql, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { resetMailAllowances, users } from "../schema";
import type { Database } from "../../types";
import { claimWindowSql, windowWait, type Window } from "./windows";
import { MAILS_PER_HOUR, MAIL_COOLDOWN_MS, RESET_MAILS_PER_CLIENT_PER_HOUR, RESET_MAILS_PER_HOUR } from "../policy";

/**
 * The mail allowances of an account: every code mail (a cooldown and an hourly cap, on the `users` row),
 * and reset mails apart, per address and per requesting client, so that no one client can use up the
 * owner's reset mails. Each is claimed by one conditional write before anything is mailed.
 */

/** The `client` of an address's own row in reset_mail_allowances. */
const WHOLE_ADDRESS = "*";

/** Milliseconds until another mail may go to the account, or 0. */
export function mailWait(lastMailAt: number, window: Window, now: number): number {
  return Math.max(lastMailAt + MAIL_COOLDOWN_MS - now, windowWait(window, MAILS_PER_HOUR, now), 0);
}

/**
 * Claims one mail of the account's allowance (cooldown and hourly cap) for the accounts `where` selects:
 * one conditional UPDATE, so of concurrent requests at most the allowance gets through. Returns the id
 * of the account when the mail may be sent, nothing when it may not.
 */
export function claimMail(db: Database, where: SQL | undefined, now: number) {
  const window = claimWindowSql(users.mailWindowStart, users.mailsInWindow, MAILS_PER_HOUR, now);
  return db
    .update(users)
    .set({ lastMailAt: now, mailWindowStart: window.start, mailsInWindow: window.count })
    .where(and(where, lte(users.lastMailAt, now - MAIL_COOLDOWN_MS), window.hasRoom))
    .returning({ id: users.id });
}

/**
 * Claims one reset mail to `email` for the request `claim` (a unique id) from `client`, as two statements
 * for one batch: the address's row first, only when the address has an account, the address has room
 * and the client has room (cooldown and hourly cap); then the client's row, only if the first claim was
 * this request's. Batch what the claim pays for after them, under `resetMailClaimed(email, claim)`.
 */
export function claimResetMail(db: Database, email: string, client: string, claim: string, now: number) {
  // Read inside the upsert of the address's row of the same table: under a name of its own.
  const clientRow = alias(resetMailAllowances, "client_allowance");
  const clientWindow = claimWindowSql(
    clientRow.windowStart,
    clientRow.mailsInWindow,
    RESET_MAILS_PER_CLIENT_PER_HOUR,
    now,
  );
  const clientHasRoom = sql`NOT EXISTS (SELECT 1 FROM ${resetMailAllowances} AS ${sql.identifier("client_allowance")} WHERE ${and(
    eq(clientRow.email, email),
    eq(clientRow.client, client),
  )} AND NOT (${clientRow.lastMailAt} <= ${now - MAIL_COOLDOWN_MS} AND ${clientWindow.hasRoom}))`;
  const row = (key: string) =>
    db
      .select({
        // Every column, in the table's order (drizzle's rule for INSERT … SELECT).
        email: sql<string>`${email}`.as("email"),
        client: sql<string>`${key}`.as("client"),
        lastMailAt: sql<number>`${now}`.as("last_mail_at"),
        windowStart: sql<number>`${now}`.as("window_start"),
        mailsInWindow: sql<number>`1`.as("mails_in_window"),
        claim: sql<string>`${claim}`.as("claim"),
      })
      .from(users);
  const claimed = (key: string, limit: number, condition: SQL) => {
    const window = claimWindowSql(resetMailAllowances.windowStart, resetMailAllowances.mailsInWindow, limit, now);
    return {
      target: [resetMailAllowances.email, resetMailAllowances.client],
      set: { lastMailAt: now, windowStart: window.start, mailsInWindow: window.count, claim },
      setWhere: and(window.hasRoom, condition),
    };
  };
  const ours = resetMailClaimed(email, claim);
  return [
    db
      .insert(resetMailAllowances)
      .select(row(WHOLE_ADDRESS).where(and(eq(users.email, email), clientHasRoom)))
      .onConflictDoUpdate(claimed(WHOLE_ADDRESS, RESET_MAILS_PER_HOUR, clientHasRoom)),
    db
      .insert(resetMailAllowances)
      .select(row(client).where(and(eq(users.email, email), ours)))
      .onConflictDoUpdate(claimed(client, RESET_MAILS_PER_CLIENT_PER_HOUR, ours)),
  ] as const;
}

/** The condition that the reset mail to `email` was claimed by the request `claim` (see claimResetMail). */
export function resetMailClaimed(email: string, claim: string): SQL {
  return sql`EXISTS (SELECT 1 FROM ${resetMailAllowances} WHERE ${and(
    eq(resetMailAllowances.email, email),
    eq(resetMailAllowances.client, WHOLE_ADDRESS),
    eq(resetMailAllowances.claim, claim),
  )})`;
}

/** The reset-mail allowance rows of `email`: the address's and the client's (see claimResetMail). */
export function resetMailAllowance(db: Database, email: string, client: string) {
  return db
    .select({
      client: resetMailAllowances.client,
      lastMailAt: resetMailAllowances.lastMailAt,
      start: resetMailAllowances.windowStart,
      count: resetMailAllowances.mailsInWindow,
    })
    .from(resetMailAllowances)
    .where(
      and(eq(resetMailAllowances.email, email), sql`${resetMailAllowances.client} IN (${WHOLE_ADDRESS}, ${client})`),
    );
}

export type ResetMailSkipped = "client_cooldown" | "client_hourly_cap" | "address_hourly_cap";

/**
 * Which part of the reset-mail allowance held a mail back, and for how long, from the rows as the claim
 * left them. A claim lost to a concurrent request of the same client counts as that client's cooldown.
 */
export function resetMailWait(
  rows: Array<{ client: string; lastMailAt: number } & Window>,
  client: string,
  now: number,
): { reason: ResetMailSkipped; waitMs: number } {
  const ofClient = rows.find((row) => row.client === client);
  const ofAddress = rows.find((row) => row.client === WHOLE_ADDRESS);
  const clientCap = ofClient ? windowWait(ofClient, RESET_MAILS_PER_CLIENT_PER_HOUR, now) : 0;
  const addressCap = ofAddress ? windowWait(ofAddress, RESET_MAILS_PER_HOUR, now) : 0;
  if (clientCap > 0) return { reason: "client_hourly_cap", waitMs: clientCap };
  if (addressCap > 0) return { reason: "address_hourly_cap", waitMs: addressCap };
  const cooldown = ofClient ? ofClient.lastMailAt + MAIL_COOLDOWN_MS - now : 0;
  return { reason: "client_cooldown", waitMs: Math.max(cooldown, 0) || MAIL_COOLDOWN_MS };
}
