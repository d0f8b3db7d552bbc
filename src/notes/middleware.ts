import { createMiddleware } from "hono/factory";
import { clientRateLimit } from "../lib/request-limits";
import type { AppEnv } from "../types";
import { NoteMessage } from "./messages";
import { parseNoteId } from "./requests";

/** The notes area's own middleware: the contract's id check first, and the limit on searches. */

/** Answers the contract's 400 for a bad `{id}` (on paths that have one) before anything else is looked at. */
export const noteIdFirst = createMiddleware(async (c, next) => {
  const id = c.req.param("id");
  if (id !== undefined) parseNoteId(id);
  await next();
});

/** Searches count against a limit of their own; a list (GET /notes without `q`) against none. */
const searchLimit = clientRateLimit(
  (env) => ({ client: env.SEARCH_RATE_LIMITER, network: env.SEARCH_RATE_LIMITER_IPV6_48 }),
  ["GET"],
  NoteMessage.searchThrottled,
);
export const limitSearches = createMiddleware<AppEnv>((c, next) =>
  c.req.query("q") === undefined ? next() : searchLimit(c, next),
);
