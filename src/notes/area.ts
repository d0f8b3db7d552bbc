import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import type { Logger } from "../lib/log";
import type { Bound } from "../db/compiled";
import type { AppEnv, Bindings, Database } from "../types";
import { attachmentsApp } from "./attachments/routes";
import { notesApp } from "./routes";

/**
 * Whoever holds on to an account beyond one request (the live sockets, src/live/), as the notes area sees them:
 * `watching` is a statement a write runs in its own batch, answering a row while someone may be watching
 * account `userId`'s notes; `changed` is told, after such a write committed, with the write's D1 bookmark.
 */
export interface NotesWatchers {
  watching(db: Database, userId: number): Bound<unknown>;
  changed(env: Bindings, log: Logger, userId: number, bookmark: string | null): Promise<void>;
}

/** What the notes area is handed at wiring time (index.ts): who may be watching an account's notes. */
export interface NotesSeams {
  watchers: NotesWatchers;
}

/**
 * The notes area, mounted at /notes: its routes (routes.ts) and its attachments' (attachments/), with `c.var.watchers` bound to the request from what it is
 * handed. Writes go through notes/answers.ts's `written`, which runs `watching` in the write's batch and, when
 * it answered, `changed` after the answer (waitUntil).
 */
export function notesArea({ watchers }: NotesSeams) {
  return (
    new Hono<AppEnv>()
      .use(
        createMiddleware<AppEnv>(async (c, next) => {
          c.set("watchers", {
            watching: (userId) => watchers.watching(c.var.db, userId),
            changed: (userId) => c.executionCtx.waitUntil(watchers.changed(c.env, c.var.log, userId, c.var.bookmark())),
          });
          await next();
        }),
      )
      // Before the notes' routes: their middleware (a 1 MiB body limit among it) covers every path under /notes.
      .route("/:id/attachments", attachmentsApp)
      .route("/", notesApp)
  );
}
