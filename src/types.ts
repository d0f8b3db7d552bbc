import type { DrizzleD1Database } from "drizzle-orm/d1";
import type { Config } from "./config";
import type { D1Client } from "./db/client";
import type { Logger } from "./lib/log";
import type { AccessClaims } from "./lib/tokens";

/**
 * Bindings, vars and secrets as wrangler.toml declares them (generated into worker-configuration.d.ts).
 * A secret can still be unset at run time (tests, `wrangler dev` without `.dev.vars`): config.ts treats
 * an empty or missing value as unset.
 */
export type Bindings = Env;

/** Plain query builder: the app uses no relational queries, so no schema is registered. */
export type Database = DrizzleD1Database & { $client: D1Client };

/** The one environment type every Hono app and handler in this project shares. */
export type AppEnv = {
  Bindings: Bindings;
  Variables: {
    db: Database;
    config: Config;
    requestId: string;
    log: Logger;
    /**
     * The user and session of a valid access token, on endpoints that require one (and on the notes area
     * when NOTES_AUTH=required); undefined while notes are public.
     */
    caller?: AccessClaims;
  };
};
