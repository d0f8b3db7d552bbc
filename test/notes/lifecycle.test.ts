/**
 * What an account owns in notes (src/notes/lifecycle.ts), run against the real database as the accounts
 * area runs it: the deletion's statements in its batch, the clean-up's by name.
 */
import { env } from "cloudflare:workers";
import { and, eq, sql, type SQL } from "drizzle-orm";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { liveSession } from "../../src/auth/caller";
import { databaseOf } from "../../src/db/client";
import { loginFailures, users } from "../../src/auth/schema";
import { DAY, MINUTE } from "../../src/lib/units";
import { accountNotesDeletion, notesCleanUp, type CleanUpStatement } from "../../src/notes/lifecycle";
import { logIn, sessionIdOf, storedUser, verifiedAccount } from "../support/accounts";
import { callWithEnv, count } from "../support/app";
import { Note } from "../support/notes";

const db = databaseOf(env.DB);

/** A user with three notes written through the API (so the triggers number them), the first deleted again. */
async function owner() {
  const email = await verifiedAccount();
  const { token } = await logIn(email);
  const send = (method: string, path: string, body?: unknown) =>
    callWithEnv({ NOTES_AUTH: "required" }, method, path, body, { Authorization: `Bearer ${token}` });
  const ids: number[] = [];
  for (const title of ["one", "two", "three"])
    ids.push(v.parse(Note, await (await send("POST", "/notes", { title, content: "c" })).json()).id);
  expect((await send("DELETE", `/notes/${ids[0]}`)).status).toBe(204);
  return { email, userId: (await storedUser(email))!.id, sessionId: sessionIdOf(token), send, ids };
}

/** How many notes, tombstones and clocks the notes area holds for `userId`. */
async function held(userId: number) {
  return {
    notes: await count("SELECT count(*) AS n FROM notes WHERE user_id = ?", userId),
    tombstones: await count("SELECT count(*) AS n FROM note_tombstones WHERE owner = ?", userId),
    clocks: await count("SELECT count(*) AS n FROM note_clocks WHERE owner = ?", userId),
  };
}

const everything = { notes: 2, tombstones: 1, clocks: 1 };
const nothing = { notes: 0, tombstones: 0, clocks: 0 };
const TRUE: SQL = sql`1`;
const FALSE: SQL = sql`0`;

describe("accountNotesDeletion", () => {
  it("deletes nothing while the guard does not hold", async () => {
    const { userId } = await owner();
    const [first, ...rest] = accountNotesDeletion(db, userId, FALSE);
    await db.batch([first!, ...rest]);
    expect(await held(userId)).toEqual(everything);
  });

  it("deletes the account's notes, then the tombstones and clock they leave; another account's stay", async () => {
    const { userId } = await owner();
    const other = await owner();
    const [first, ...rest] = accountNotesDeletion(db, userId, TRUE);
    await db.batch([first!, ...rest]);
    expect(await held(userId)).toEqual(nothing);
    expect(await held(other.userId)).toEqual(everything);
  });

  it("runs before the user row in the account's batch, guarded by the caller's live session", async () => {
    // As DELETE /account runs it: one batch, every statement only while the caller's session is live.
    const deleteAccount = (caller: { userId: number; sessionId: string; email: string }) => {
      const live = liveSession(caller, Date.now());
      return db.batch([
        db.delete(loginFailures).where(and(eq(loginFailures.email, caller.email), live)),
        ...accountNotesDeletion(db, caller.userId, live),
        db
          .delete(users)
          .where(and(eq(users.id, caller.userId), live))
          .returning({ id: users.id }),
      ]);
    };
    const ended = await owner();
    await env.DB.prepare("DELETE FROM sessions WHERE id = ?").bind(ended.sessionId).run();
    expect((await deleteAccount(ended)).at(-1)).toEqual([]);
    expect(await held(ended.userId)).toEqual(everything);

    const live = await owner();
    expect((await deleteAccount(live)).at(-1)).toEqual([{ id: live.userId }]);
    expect(await held(live.userId)).toEqual(nothing);
  });
});

/** Runs the clean-up's statements in one batch, as the cron does: each one's rows, by name. */
async function cleanUp(now: number): Promise<Record<string, unknown[]>> {
  const steps = Object.entries(notesCleanUp(db, now));
  const [first, ...rest] = steps.map(([, statement]): CleanUpStatement => statement);
  const results = await db.batch([first!, ...rest]);
  return Object.fromEntries(steps.map(([name], i) => [name, results[i]!]));
}

describe("notesCleanUp", () => {
  it("forgets expired keys and old tombstones, and moves the clock's pruned_through past them; keeps the rest", async () => {
    const { userId, send, ids } = await owner();
    expect((await send("DELETE", `/notes/${ids[1]}`)).status).toBe(204);
    const now = Date.now();
    const [old, young] = (
      await env.DB.prepare("SELECT seq FROM note_tombstones WHERE owner = ? ORDER BY seq")
        .bind(userId)
        .all<{ seq: number }>()
    ).results;
    await env.DB.prepare("UPDATE note_tombstones SET deleted_at = ? WHERE owner = ? AND seq = ?")
      .bind(now - 31 * DAY, userId, old!.seq)
      .run();
    const key = (createdAt: number) =>
      env.DB.prepare(
        "INSERT INTO idempotency_keys (user_id, key, request_hash, claim, created_at) VALUES (?, ?, 'h', 'c', ?) RETURNING id",
      )
        .bind(userId, crypto.randomUUID(), createdAt)
        .first<number>("id");
    const expired = await key(now - DAY - MINUTE);
    const kept = await key(now - MINUTE);

    const results = await cleanUp(now);
    expect(Object.keys(results)).toEqual([
      "expiredIdempotencyKeys",
      "prunedClocks",
      "prunedTombstones",
      "prunedShareEnds",
      "expiredShareAddresses",
    ]);
    expect(results.expiredIdempotencyKeys).toContainEqual({ id: expired });
    expect(results.expiredIdempotencyKeys).not.toContainEqual({ id: kept });
    expect(results.prunedClocks).toContainEqual({ owner: userId });
    expect(results.prunedTombstones).toContainEqual({ seq: old!.seq });
    expect(results.prunedTombstones).not.toContainEqual({ seq: young!.seq });

    expect(await count("SELECT pruned_through AS n FROM note_clocks WHERE owner = ?", userId)).toBe(old!.seq);
    expect(
      await count("SELECT count(*) AS n FROM note_tombstones WHERE owner = ? AND seq = ?", userId, young!.seq),
    ).toBe(1);
    expect(await count("SELECT count(*) AS n FROM idempotency_keys WHERE id IN (?, ?)", expired, kept)).toBe(1);
    expect(await count("SELECT count(*) AS n FROM idempotency_keys WHERE id = ?", kept)).toBe(1);
  });

  it("leaves a clock without old tombstones as it is", async () => {
    const { userId } = await owner();
    const results = await cleanUp(Date.now());
    expect(results.prunedClocks).not.toContainEqual({ owner: userId });
    expect(await count("SELECT pruned_through AS n FROM note_clocks WHERE owner = ?", userId)).toBe(0);
    expect(await held(userId)).toEqual(everything);
  });
});
