import type { SmtpFixture } from "./smtp/types";

declare global {
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
      SMTP: SmtpFixture;
      EMPTY_DB: D1Database;
      LIST_DB: D1Database;
    }
  }
}
