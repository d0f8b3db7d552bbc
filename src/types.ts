import type { Config, OptionalSecrets } from "./config";
import type { Database } from "./db/client";
import type { Logger } from "./lib/log";

/**
 * Bindings, vars and secrets as wrangler.toml declares them (generated into worker-configuration.d.ts).
 * A secret can still be unset at run time (tests, `wrangler dev` without `.dev.vars`): config.ts treats
 * an empty or missing value as unset.
 */
export type Bindings = Env & OptionalSecrets;

export type { Database };

/** The one environment type every Hono app and handler in this project shares. */
export type AppEnv = {
  Bindings: Bindings;
  Variables: {
    db: Database;
    config: Config;
    requestId: string;
    log: Logger;
  };
};
