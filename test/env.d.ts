import type { SmtpFixture } from "./smtp/types";

declare global {
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
      SMTP: SmtpFixture;
      EMPTY_DB: D1Database;
      MAIL_EMAIL?: string;
      MAIL_APP_PASSWORD?: string;
      JWT_SECRET_KEY?: string;
      SMTP_TIMEOUT_MS?: string;
    }
  }
}
