import type { DrizzleD1Database } from "drizzle-orm/d1";
import type * as schema from "./db/schema";
import type { Config } from "./config";
import type { Logger } from "./lib/log";

/** Bindings from wrangler.toml (generated into worker-configuration.d.ts) plus the secrets and optional vars. */
export type Bindings = Env & {
  MAIL_EMAIL?: string;
  MAIL_APP_PASSWORD?: string;
  JWT_SECRET_KEY?: string;
  /** Whole budget for one SMTP conversation, in milliseconds (default 10000). */
  SMTP_TIMEOUT_MS?: string;
};

export type Database = DrizzleD1Database<typeof schema>;

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
