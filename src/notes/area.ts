import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import type { Logger } from "../lib/log";
import type { AppEnv, Bindings } from "../types";
import { attachmentsApp } from "./attachments/routes";
import { notesApp } from "./routes";

/**
 * Told that account `userId`'s notes changed, after the write committed, with the write's D1 bookmark: what
 * holds on to an account beyond one request (the live sockets, src/live/) tells its clients to pull.
 */
export type NotesChanged = (env: Bindings, log: Logger, userId: number, bookmark: string | null) => Promise<void>;

/** What the notes area is handed at wiring time (index.ts): who hears that notes changed. */
export interface NotesSeams {
  notesChanged: NotesChanged;
}

/**
 * The notes area, mounted at /notes: its routes (routes.ts) and its attachments' (attachments/), with
 * `c.var.notesChanged` set from what it is handed. A write calls it once committed; the listener runs after
 * the answer (waitUntil).
 */
export function notesArea({ notesChanged }: NotesSeams) {
  return (
    new Hono<AppEnv>()
      .use(
        createMiddleware<AppEnv>(async (c, next) => {
          c.set("notesChanged", (userId) =>
            c.executionCtx.waitUntil(notesChanged(c.env, c.var.log, userId, c.var.bookmark())),
          );
          await next();
        }),
      )
      // Before the notes' routes: their middleware (a 1 MiB body limit among it) covers every path under /notes.
      .route("/:id/attachments", attachmentsApp)
      .route("/", notesApp)
  );
}
