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
    /** The D1 bookmark of the request's session as it stands: after a write, the write's (index.ts). */
    bookmark: () => string | null;
    /**
     * Set by the accounts area (auth/routes.ts): a path that ended sessions of account `userId` calls it
     * after its write committed, and whoever holds sessions beyond a request (live sockets) re-checks them.
     */
    sessionsEnded: (userId: number) => void;
    /**
     * Set by the notes area (notes/area.ts): a write to account `userId`'s notes calls it after it committed,
     * and whoever watches the account (live sockets) hears of it.
     */
    notesChanged: (userId: number) => void;
  };
};
