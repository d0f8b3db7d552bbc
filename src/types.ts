import type { AuditTrail } from "./audit/events";
import type { Config, OptionalSecrets } from "./config";
import type { Database } from "./db/client";
import type { Bound } from "./db/compiled";
import type { Logger } from "./lib/log";

/**
 * Bindings, vars and secrets as wrangler.toml declares them (generated into worker-configuration.d.ts).
 * A secret can still be unset at run time (tests, `wrangler dev` without `.dev.vars`): src/config/ treats
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
     * Set by the accounts area (auth/area.ts): a path that ended sessions of account `userId` calls it
     * after its write committed, and whoever holds sessions beyond a request (live sockets) re-checks them.
     */
    sessionsEnded: (userId: number) => void;
    /**
     * Set by the notes area (notes/area.ts): which accounts a write concerns someone may be watching, as a
     * statement for the write's batch (account `userId`; the readers of note `noteId`, its owner and the accounts
     * it is shared with; the account share `shareId` reached), and what a write that found them calls for each
     * after it committed.
     */
    watchers: {
      watching: (userId: number) => Bound<{ userId: number }>;
      readers: (noteId: number) => Bound<{ userId: number }>;
      grantee: (shareId: string) => Bound<{ userId: number }>;
      changed: (userId: number) => void;
    };
    /**
     * Set by the wiring (index.ts) for the accounts area and the admin API: the audit log's writer of this request,
     * whose statements go into the batch of the change they record (audit/events.ts).
     */
    audit: AuditTrail;
  };
};
