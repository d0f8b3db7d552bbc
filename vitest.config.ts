import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import * as v from "valibot";
import { unstable_readConfig } from "wrangler";
import { defineConfig, type Plugin } from "vitest/config";

/**
 * The plugin loads a developer's `.dev.vars` over wrangler.toml's [vars], as `wrangler dev` does, and the
 * tests must not depend on it: every var of wrangler.toml goes in as a binding, which wins over it, then the
 * suite's own bindings. TEST_VARS tells test/config/index.test.ts which is which.
 */
function overDefaults<T extends Record<string, unknown>>(own: T) {
  // wrangler's Config type comes from a package it does not ship: the vars are checked here instead.
  const config: unknown = unstable_readConfig({ config: "./wrangler.toml" });
  const { vars: defaults } = v.parse(v.object({ vars: v.record(v.string(), v.string()) }), config);
  return { ...defaults, ...own, TEST_VARS: { defaults, own: Object.keys(own) } };
}

/**
 * The secrets wrangler.toml's [secrets] requires. They go in as bindings like the rest; wrangler also checks each
 * runtime start that it found them where it looks for local secrets itself (`.dev.vars`, `.env`, else the process
 * environment) and warns when it did not, so a run without a `.dev.vars` (CI, a fresh clone) hands them to it
 * through the process environment. A developer's `.dev.vars` or shell keeps precedence there; the bindings win.
 */
const SECRETS = {
  JWT_SECRET_KEY: "test-secret-0123456789abcdef0123456789",
  MAIL_EMAIL: "sender@notes.test",
  MAIL_APP_PASSWORD: "abcdefghijklmnop",
};
for (const [name, value] of Object.entries(SECRETS)) process.env[name] ??= value;

/** The admin API's token in the tests (test/support/admin.ts sends it). */
const ADMIN_TOKEN = "test-admin-token-0123456789abcdef0123456789";

/**
 * Loads a dependency whose published source map names sources its package does not ship (oauth4webapi's points at
 * ../src/index.ts) without that map, as the built file it is; Vite would otherwise warn that the map "points to
 * missing source files". Stack traces into such a dependency show its built code either way.
 */
function withoutDanglingSourceMaps(): Plugin {
  const comment = /\n\/\/# sourceMappingURL=(?!data:)(\S+)\s*$/;
  return {
    name: "without-dangling-source-maps",
    enforce: "pre",
    load(id) {
      const file = id.split("?")[0]!;
      if (!file.includes("/node_modules/") || !/\.[cm]?js$/.test(file) || !existsSync(file)) return null;
      const code = readFileSync(file, "utf8");
      const found = comment.exec(code);
      const mapFile = found ? resolve(dirname(file), found[1]!) : undefined;
      if (!found || !mapFile || !existsSync(mapFile)) return null;
      const map = v.parse(
        v.object({ sourceRoot: v.optional(v.string()), sources: v.array(v.string()) }),
        JSON.parse(readFileSync(mapFile, "utf8")),
      );
      const root = resolve(dirname(mapFile), map.sourceRoot ?? "");
      if (map.sources.every((source) => existsSync(resolve(root, source)))) return null;
      return { code: code.slice(0, found.index), map: null };
    },
  };
}

export default defineConfig(async () => {
  // The real drizzle-kit migrations, applied by test/apply-migrations.ts in the Workers runtime.
  const migrations = await readD1Migrations("./drizzle");
  return {
    plugins: [
      withoutDanglingSourceMaps(),
      cloudflareTest(({ inject }) => {
        const smtp = inject("smtp");
        const oauth = inject("oauth");
        const webhooks = inject("webhooks");
        return {
          wrangler: { configPath: "./wrangler.toml" },
          // Off: at its verbose level the runtime logs every failed outbound fetch as an "uncaught exception" with
          // a stack dump, even one the worker catches (the tests of an unreachable provider or siteverify), and
          // every non-ASCII header value a test sends on purpose. WORKERD_VERBOSE=1 turns it back on for debugging.
          verbose: process.env.WORKERD_VERBOSE === "1",
          miniflare: {
            // A second, never-migrated database: a real D1 whose tables are missing. A third, LIST_DB,
            // belongs to test/notes/list.test.ts alone: it holds an exact set of notes and loses its
            // table mid-response, which the shared DB cannot do without disturbing other tests.
            // SEARCH_DB belongs to test/notes/search.test.ts: it is migrated in steps, to see the search
            // migration index the notes written before it. BUDGET_DB belongs to test/auth/limits/code-budget.test.ts:
            // the deployment-wide counter it exhausts must not refuse the codes of every other test. MAIL_DB
            // belongs to test/auth/limits/mail-budget.test.ts for the same reason (the deployment's mail budget).
            // MIGRATION_DB belongs to test/db/migrations.test.ts: migrated in steps, with rows written between them.
            d1Databases: {
              EMPTY_DB: "empty-db",
              LIST_DB: "list-db",
              SEARCH_DB: "search-db",
              BUDGET_DB: "budget-db",
              MAIL_DB: "mail-db",
              MIGRATION_DB: "migration-db",
              SIGN_IN_DETAIL_DB: "sign-in-detail-db",
            },
            bindings: overDefaults({
              TEST_MIGRATIONS: migrations,
              SMTP: smtp,
              SMTP_HOST: "127.0.0.1",
              SMTP_PORT: String(smtp.ports.mailbox),
              SMTP_SECURE: "false",
              SMTP_TIMEOUT_MS: "1500",
              ...SECRETS,
              MAIL_FROM_NAME: "Notes API Test",
              // Low cost keeps the suite fast; production reads BCRYPT_COST (default 10).
              BCRYPT_COST: "4",
              // The per-client limiter is tested on its own (test/lib/request-limits.test.ts) with RATE_LIMITS on.
              RATE_LIMITS: "off",
              // The suite mails far more than a deployment's default budget; test/auth/limits/mail-budget.test.ts
              // tests the budget on a database of its own (MAIL_DB).
              MAIL_HOURLY_LIMIT: "1000000",
              MAIL_DAILY_LIMIT: "1000000",
              MAIL_UNVERIFIED_CLIENT_HOURLY_LIMIT: "1000000",
              // Passkeys as in development: the software authenticator of test/auth/passkeys signs for
              // localhost from http://localhost:8787 (WEBAUTHN_ORIGINS's default for localhost).
              WEBAUTHN_RP_ID: "localhost",
              // Social sign-in against the loopback providers of test/oauth/servers.ts: google and apple are
              // OpenID providers (their issuers moved to loopback), github the fake GitHub, and acme an OpenID
              // provider without a client secret (native sign-in only).
              OAUTH: oauth,
              OAUTH_PROVIDERS: "google,apple,github,acme",
              OAUTH_REDIRECT_URLS: "https://app.example/oauth/done,com.example.app:/oauth",
              OAUTH_GOOGLE_CLIENT_ID: "google-web-client",
              OAUTH_GOOGLE_CLIENT_SECRET: "google-web-secret",
              OAUTH_GOOGLE_ISSUER: oauth.google.issuer,
              OAUTH_GOOGLE_AUDIENCES: "google-ios-client,google-android-client",
              OAUTH_APPLE_CLIENT_ID: "com.example.web",
              OAUTH_APPLE_ISSUER: oauth.apple.issuer,
              OAUTH_APPLE_AUDIENCES: "com.example.app",
              OAUTH_APPLE_TEAM_ID: oauth.apple.teamId,
              OAUTH_APPLE_KEY_ID: oauth.apple.keyId,
              OAUTH_APPLE_PRIVATE_KEY: oauth.apple.privateKeyPem,
              OAUTH_GITHUB_CLIENT_ID: "github-client",
              OAUTH_GITHUB_CLIENT_SECRET: "github-secret",
              OAUTH_GITHUB_URL: oauth.github.url,
              OAUTH_GITHUB_API_URL: oauth.github.apiUrl,
              OAUTH_ACME_CLIENT_ID: "acme-client",
              OAUTH_ACME_ISSUER: oauth.google.issuer,
              // The admin API, open to the tests' token; test/lib/admin.test.ts covers it unset and unusable.
              ADMIN_TOKEN: ADMIN_TOKEN,
              // Webhooks to the loopback receiver of test/webhooks/servers.ts, retried after 1, 2, 4… seconds so a
              // test can watch retries. Only `user.signed_out_by_admin` is subscribed for the suite: the webhook
              // tests subscribe to more through the app's settings for their own requests (callWithEnv).
              WEBHOOKS: webhooks,
              WEBHOOK_URL: webhooks.url,
              WEBHOOK_SECRET: webhooks.secret,
              WEBHOOK_EVENTS: "user.signed_out_by_admin",
              WEBHOOK_RETRY_BASE_SECONDS: "1",
            }),
          },
        };
      }),
    ],
    test: {
      globalSetup: ["./test/global-setup.ts"],
      setupFiles: ["./test/apply-migrations.ts"],
      // The app logs one JSON line per event; show them only for failing tests.
      silent: "passed-only" as const,
      // One Workers runtime per vitest worker, reused by every file that worker runs, instead of one per file:
      // starting a runtime and loading the app's ~600 modules into it took longer than most files' tests. Each
      // file still starts from empty storage and a freshly migrated DB (test/apply-migrations.ts).
      isolate: false,
      // A test's own deadline: the default 5 s is met with room on a quiet machine, but a burst test (300
      // requests) or a file's first passkey ceremony (its library loads then) can pass it on a busy one.
      testTimeout: 20_000,
    },
  };
});
