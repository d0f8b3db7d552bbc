import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import type { Logger } from "../lib/log";
import type { SQL } from "drizzle-orm";
import { compile, type Bound, type Placeholders, type Query } from "../db/compiled";
import type { AppEnv, Bindings, Database } from "../types";
import { granteeOf, readersOf } from "./access";
import { attachmentsApp } from "./attachments/routes";
import { notesApp } from "./routes";
import { linksApp } from "./sharing/link-routes";
import { sharesApp, type ShareMail } from "./sharing/share-routes";

/**
 * Whoever holds on to an account beyond one request (the live sockets, src/live/), as the notes area sees them:
 * `watching` is a statement a write runs in its own batch, answering a row while someone may be watching
 * account `userId`'s notes; `watchedAmong` the query answering a row for each of `accounts` (a subquery of user
 * ids) someone may be watching, which the area compiles; `changed` is told, after such a write committed, with the
 * write's D1 bookmark.
 */
export interface NotesWatchers {
  watching(db: Database, userId: number): Bound<{ userId: number }>;
  watchedAmong(db: Database, accounts: SQL): Query<{ userId: number }>;
  changed(env: Bindings, log: Logger, userId: number, bookmark: string | null): Promise<void>;
}

/**
 * What the notes area is handed at wiring time (index.ts): who may be watching an account's notes, and the mail
 * that tells an address a note was shared with it.
 */
export interface NotesSeams {
  watchers: NotesWatchers;
  shareMail: ShareMail;
}

/**
 * The notes area, mounted at /notes: its routes (routes.ts), its attachments' (attachments/) and its sharing's
 * (sharing/), with `c.var.watchers` bound to the request from what it is handed. Writes go through
 * notes/answers.ts's `written`, which runs the watchers' statement in the write's batch and, for each account it
 * answered, `changed` after the answer (waitUntil).
 */
export function notesArea({ watchers, shareMail }: NotesSeams) {
  // Compiled on first use, once per isolate (db/compiled.ts), like every statement of the area.
  const readers = compile((db, p: Placeholders<{ noteId: number }>) => watchers.watchedAmong(db, readersOf(p.noteId)));
  const grantee = compile((db, p: Placeholders<{ shareId: string }>) =>
    watchers.watchedAmong(db, granteeOf(p.shareId)),
  );
  return (
    new Hono<AppEnv>()
      .use(
        createMiddleware<AppEnv>(async (c, next) => {
          c.set("watchers", {
            watching: (userId) => watchers.watching(c.var.db, userId),
            readers: (noteId) => readers(c.var.db.$client, { noteId }),
            grantee: (shareId) => grantee(c.var.db.$client, { shareId }),
            changed: (userId) => c.executionCtx.waitUntil(watchers.changed(c.env, c.var.log, userId, c.var.bookmark())),
          });
          await next();
        }),
      )
      // Before the notes' routes: their middleware (a 1 MiB body limit among it) covers every path under /notes.
      .route("/:id/attachments", attachmentsApp)
      .route("/:id/links", linksApp)
      .route("/:id/shares", sharesApp(shareMail))
      .route("/", notesApp)
  );
}
