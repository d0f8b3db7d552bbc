import type { D1Migration } from "cloudflare:test";
import type { OAuthFixture } from "./oauth/types";
import type { SmtpFixture } from "./smtp/types";
import type { WebhookFixture } from "./webhooks/types";

declare global {
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
      /** wrangler.toml's [vars], and the names of the bindings vitest.config.ts sets over them. */
      TEST_VARS: { defaults: Record<string, string>; own: string[] };
      SMTP: SmtpFixture;
      OAUTH: OAuthFixture;
      WEBHOOKS: WebhookFixture;
      /** The admin API's token of the suite (vitest.config.ts). */
      ADMIN_TOKEN: string;
      EMPTY_DB: D1Database;
      LIST_DB: D1Database;
      SEARCH_DB: D1Database;
      BUDGET_DB: D1Database;
      MAIL_DB: D1Database;
      MIGRATION_DB: D1Database;
      /** test/db/migrations.test.ts: migrated up to 0020_sign_in_detail, with sessions of the old shape. */
      SIGN_IN_DETAIL_DB: D1Database;
    }
  }
}
