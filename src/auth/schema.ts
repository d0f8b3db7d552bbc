import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * The accounts area's tables (drizzle-kit reads every area's schema.ts). Only src/auth/ names them; the other
 * areas reach accounts through auth/caller.ts, and their schema files reference `users` and `sessions` for
 * their foreign keys (docs/design.md, "Seams").
 */

export const users = sqliteTable("users", {
  // INTEGER PRIMARY KEY without AUTOINCREMENT: SQLite hands out max(id) + 1, so while no account is
  // deleted the id equals the number of users at creation, as the spec says. The id of a deleted account
  // can come back, but nothing of the old account does: its sessions, codes and notes go with it.
  id: integer("id").primaryKey(),
  // Stored normalized (see normalizeEmail); the unique index decides concurrent registrations.
  email: text("email").notNull().unique(),
  password: text("password").notNull(),
  isVerified: integer("isVerified", { mode: "boolean" }).notNull().default(false),
  // Milliseconds since the epoch.
  createdAt: integer("createdAt").notNull().default(0),
  // Every mail to the account (codes of any purpose): the last one, and a fixed one-hour window.
  lastMailAt: integer("lastMailAt").notNull().default(0),
  mailWindowStart: integer("mailWindowStart").notNull().default(0),
  mailsInWindow: integer("mailsInWindow").notNull().default(0),
  // Moves on whenever what proved a sign-in may no longer prove one (the password is set, changed, reset or
  // cleared): a sign-in opens its session only while the epoch is still the one it read with its proof, so
  // one racing a password change starts nothing, whatever the method (auth/core/gate.ts).
  signInEpoch: integer("sign_in_epoch").notNull().default(0),
  // When the password was last set, changed, reset or cleared (0: at registration): device tokens issued
  // before it still mark their device, but share one small allowance of failures (auth/core/devices.ts).
  passwordChangedAt: integer("password_changed_at").notNull().default(0),
  // The account's WebAuthn user handle (`user.id` of a passkey): 32 random bytes, base64url, set once by the
  // first passkey registration and never changed. Never the numeric id or the address: ids come back after
  // a deletion, and an authenticator keeps the handle for as long as it keeps the passkey.
  webauthnHandle: text("webauthn_handle").unique(),
  // Suspended by an operator (POST /admin/users/{id}/ban) until this time; BANNED_FOREVER until an unban; null: not
  // banned. Every way into a session checks it in the statement that opens the session (core/gate.ts).
  bannedUntil: integer("banned_until"),
  banReason: text("ban_reason"),
  // When a session was last opened for the account (core/gate.ts); null: never.
  lastSignInAt: integer("last_sign_in_at"),
});

/** What a one-time code proves when it is entered. */
export const CODE_PURPOSES = ["verify_email", "change_email"] as const;
export type CodePurpose = (typeof CODE_PURPOSES)[number];

/**
 * The live one-time code of each purpose of an account (the spec's verificationToken and tokenExpiry
 * for purpose `verify_email`): one row per account and purpose, replaced when a new code is issued and
 * deleted when the code is used. The hourly window outlives the codes it counted, so new codes bring no
 * fresh guesses.
 */
export const oneTimeCodes = sqliteTable(
  "one_time_codes",
  {
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    purpose: text("purpose", { enum: CODE_PURPOSES }).notNull(),
    code: text("code").notNull(),
    expiresAt: integer("expires_at").notNull(),
    // Tries claimed against this code; at MAX_CODE_ATTEMPTS it is void.
    attempts: integer("attempts").notNull().default(0),
    // Tries claimed against any code of this purpose, in a fixed one-hour window.
    windowStart: integer("window_start").notNull().default(0),
    windowAttempts: integer("window_attempts").notNull().default(0),
    // For `change_email`: the address the code was mailed to, which it proves and switches the account to.
    newEmail: text("new_email"),
  },
  (table) => [primaryKey({ columns: [table.userId, table.purpose] })],
);

/**
 * One row per forgot-password request that mailed a code: the code is bound to the request's id (the
 * `request_id` of the answer), so a reset needs both, and each request's code has its own tries. Someone
 * else's guesses with their own request ids can neither void the owner's code nor use up its tries.
 */
export const resetRequests = sqliteTable(
  "reset_requests",
  {
    // 128 random bits, base64url: the `request_id` the forgot-password answer carried.
    id: text("id").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    code: text("code").notNull(),
    expiresAt: integer("expires_at").notNull(),
    // Tries claimed against this code; at MAX_CODE_ATTEMPTS it is void.
    attempts: integer("attempts").notNull().default(0),
  },
  (table) => [index("reset_requests_user_id").on(table.userId), index("reset_requests_expires_at").on(table.expiresAt)],
);

/**
 * The reset-mail allowance of an address: one row for the address as a whole (`client` = "*"), the cap
 * against mail-bombing it, and one per requesting client (see lib/client-key.ts), so that no one client
 * can use up the owner's reset mails. Each row: the last mail and a fixed one-hour window; `claim` names
 * the request that claimed last, so the statements batched after the claim can tell whether it was theirs.
 */
export const resetMailAllowances = sqliteTable(
  "reset_mail_allowances",
  {
    email: text("email").notNull(),
    client: text("client").notNull(),
    lastMailAt: integer("last_mail_at").notNull().default(0),
    windowStart: integer("window_start").notNull().default(0),
    mailsInWindow: integer("mails_in_window").notNull().default(0),
    claim: text("claim").notNull().default(""),
  },
  (table) => [primaryKey({ columns: [table.email, table.client] })],
);

/**
 * One row per confirmed e-mail change, for EMAIL_CHANGE_REVERT_TTL_MS: the notice to the old address
 * carries a revert token that puts the old address back, ends every session, clears the password (a
 * phished password must not outlive the undo) and removes second factors added since. While the row
 * lives, its old address stays reserved for the account. Only the token's SHA-256 is stored.
 */
export const emailChangeReverts = sqliteTable(
  "email_change_reverts",
  {
    // SHA-256 (hex) of the revert token: 128 random bits, base64url, mailed once.
    tokenHash: text("token_hash").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    oldEmail: text("old_email").notNull(),
    // When the change was confirmed: a revert voids only the tokens of later changes, and removes the
    // second factors added after its own change.
    createdAt: integer("created_at").notNull().default(0),
    expiresAt: integer("expires_at").notNull(),
  },
  (table) => [
    index("email_change_reverts_user_id").on(table.userId),
    index("email_change_reverts_expires_at").on(table.expiresAt),
  ],
);

/** The kinds of second factor an account can enrol, one of each at most. */
export const FACTOR_KINDS = ["totp"] as const;

/** The states of a second factor: enrolled and waiting for its first code, or in use. */
export const MFA_STATUSES = ["pending", "active"] as const;

/**
 * An account's second factors, one row per kind (today TOTP): its secret sealed at rest
 * (lib/secret-box.ts), and for TOTP the last time step accepted, so that no code is accepted twice: a
 * verification claims its step with one conditional UPDATE (`WHERE last_used_step < ?`).
 */
export const mfaFactors = sqliteTable(
  "mfa_factors",
  {
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: FACTOR_KINDS }).notNull(),
    sealedSecret: text("sealed_secret").notNull(),
    status: text("status", { enum: MFA_STATUSES }).notNull(),
    lastUsedStep: integer("last_used_step").notNull().default(0),
    createdAt: integer("created_at").notNull(),
    // Wrong codes of an active factor in a fixed one-hour window, whatever the sign-in, client or session
    // they came with: claimed before a code is checked, so a full window refuses the right code too.
    wrongWindowStart: integer("wrong_window_start").notNull().default(0),
    wrongInWindow: integer("wrong_in_window").notNull().default(0),
    // The window whose filling was mailed to the owner: one notice per window.
    noticedWindow: integer("noticed_window").notNull().default(0),
  },
  (table) => [primaryKey({ columns: [table.userId, table.kind] })],
);

/** The recovery codes of an account's factor, one row each, stored as SHA-256 (each is 100+ random bits). */
export const mfaRecoveryCodes = sqliteTable(
  "mfa_recovery_codes",
  {
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    codeHash: text("code_hash").notNull(),
  },
  (table) => [primaryKey({ columns: [table.userId, table.codeHash] })],
);

/**
 * A sign-in whose first proof was right, waiting for its second factor: the `mfa_token` (stored as SHA-256),
 * how the first proof was made (`amr`), the account's sign-in epoch it read, the device, its tries (at most
 * MFA_TOKEN_TRIES) and whether it has been used. No session exists until the second factor is verified.
 */
export const mfaChallenges = sqliteTable(
  "mfa_challenges",
  {
    tokenHash: text("token_hash").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    signInEpoch: integer("sign_in_epoch").notNull(),
    amr: text("amr").notNull(),
    deviceId: text("device_id"),
    // What the sign-in method knows beyond `amr` (auth/core/gate.ts, SignInDetail), as JSON, for the session.
    detail: text("detail"),
    expiresAt: integer("expires_at").notNull(),
    tries: integer("tries").notNull().default(0),
    used: integer("used", { mode: "boolean" }).notNull().default(false),
  },
  (table) => [index("mfa_challenges_expires_at").on(table.expiresAt)],
);

/**
 * Login attempts per e-mail address, registered or not: unknown addresses are counted and locked like
 * real ones, so the answers do not tell which addresses have accounts. `failures` counts the attempts
 * claimed since the last successful login (failed, or still checking the password); a successful login
 * deletes the row.
 */
export const loginFailures = sqliteTable("login_failures", {
  email: text("email").primaryKey(),
  failures: integer("failures").notNull().default(0),
  lockedUntil: integer("lockedUntil").notNull().default(0),
  // For pruning rows nobody has used for a day.
  lastAttemptAt: integer("lastAttemptAt").notNull().default(0),
});

/**
 * Login attempts per device of an owner (a device token's id, see auth/core/devices.ts): the same run and lock
 * as `login_failures`, so a device that logged in before is judged on its own failures only. Only devices
 * that have failed have a row; a successful login from the device deletes it.
 */
export const deviceLoginFailures = sqliteTable("device_login_failures", {
  deviceId: text("device_id").primaryKey(),
  failures: integer("failures").notNull().default(0),
  lockedUntil: integer("locked_until").notNull().default(0),
  // For pruning rows nobody has used for a day.
  lastAttemptAt: integer("last_attempt_at").notNull().default(0),
});

/**
 * One row per login: what its tokens are checked against, so ending it ends them at once. Refresh tokens
 * are not stored at all: they are derived from the session id and its generation (see lib/refresh-token.ts),
 * and each refresh moves the generation on.
 */
export const sessions = sqliteTable(
  "sessions",
  {
    // 128 random bits, base64url; the `sid` claim of its access tokens.
    id: text("id").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    // Milliseconds since the epoch, all of them.
    createdAt: integer("created_at").notNull(),
    lastUsedAt: integer("last_used_at").notNull(),
    // The earlier of last refresh + idle lifetime and login + absolute lifetime.
    expiresAt: integer("expires_at").notNull(),
    // Refreshes so far; only the refresh token of the current generation rotates the session.
    generation: integer("generation").notNull().default(0),
    // When the generation last moved on: the previous token is still honoured for a few seconds after.
    rotatedAt: integer("rotated_at").notNull().default(0),
    userAgent: text("user_agent"),
    // Password re-checks (change password or e-mail, delete the account) claimed and not found right: at
    // PASSWORD_CHECKS_PER_SESSION a wrong one ends the session.
    passwordFailures: integer("password_failures").notNull().default(0),
    // How the user signed in: RFC 8176 `amr` values, space-separated (`pwd`, `pwd otp mfa`, …; see
    // auth/core/gate.ts). Sessions from before this column were password logins.
    amr: text("amr").notNull().default("pwd"),
    // What the sign-in method knows beyond `amr` (auth/core/gate.ts, SignInDetail: the provider of a social
    // sign-in), as JSON; null when nothing.
    detail: text("detail"),
  },
  (table) => [index("sessions_user_id").on(table.userId), index("sessions_expires_at").on(table.expiresAt)],
);

/**
 * The account's passkeys (WebAuthn credentials, auth/passkeys/): our own random `id` is what clients see and
 * name; the authenticator's credential id is unique across the deployment (one credential, one account).
 * The public key is the COSE key as registered, base64url. `counter` is the authenticator's signature
 * counter: a sign-in moves it forward with one conditional UPDATE, unless both stay 0 (synced passkeys).
 * They go with the account (ON DELETE CASCADE); a password reset or change leaves them in place.
 */
export const passkeys = sqliteTable(
  "passkeys",
  {
    // 128 random bits, base64url.
    id: text("id").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    credentialId: text("credential_id").notNull().unique(),
    publicKey: text("public_key").notNull(),
    counter: integer("counter").notNull().default(0),
    // The authenticator's "backed up" flag (a synced passkey), as its last ceremony reported it.
    backedUp: integer("backed_up", { mode: "boolean" }).notNull().default(false),
    // How the browser may reach the authenticator (`usb`, `internal`, `hybrid`, ...), comma-separated.
    transports: text("transports").notNull().default(""),
    name: text("name").notNull(),
    // Milliseconds since the epoch; last_used_at is null until its first sign-in.
    createdAt: integer("created_at").notNull(),
    lastUsedAt: integer("last_used_at"),
  },
  (table) => [index("passkeys_user_id").on(table.userId)],
);

/** What a passkey challenge is for: adding a passkey to an account, or signing in with one. */
export const PASSKEY_CHALLENGE_KINDS = ["registration", "authentication"] as const;

/**
 * A WebAuthn challenge handed out by a ceremony's options, for PASSKEY_CHALLENGE_TTL_MS: claimed by one
 * `DELETE … RETURNING` before the response that signed it is checked, so each is used at most once. A
 * registration challenge belongs to the account that asked; a sign-in challenge to nobody yet.
 */
export const passkeyChallenges = sqliteTable(
  "passkey_challenges",
  {
    // 32 random bytes, base64url, as the options carry it and clientDataJSON echoes it.
    challenge: text("challenge").primaryKey(),
    kind: text("kind", { enum: PASSKEY_CHALLENGE_KINDS }).notNull(),
    userId: integer("user_id").references(() => users.id, { onDelete: "cascade" }),
    expiresAt: integer("expires_at").notNull(),
  },
  (table) => [
    index("passkey_challenges_user_id").on(table.userId),
    index("passkey_challenges_expires_at").on(table.expiresAt),
  ],
);

/**
 * An identity at a sign-in provider linked to an account (auth/oauth/): the provider's issuer and its
 * subject (the `sub` of its id_tokens, GitHub's numeric user id) name it, whatever address it shows later.
 * One identity per provider and account, so DELETE /auth/identities/{provider} names one.
 */
export const oauthIdentities = sqliteTable(
  "oauth_identities",
  {
    provider: text("provider").notNull(),
    issuer: text("issuer").notNull(),
    subject: text("subject").notNull(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    // The address the provider showed at the last sign-in (normalized), null when it showed none.
    email: text("email"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.issuer, table.subject] }),
    uniqueIndex("oauth_identities_user_id_provider").on(table.userId, table.provider),
  ],
);

/**
 * A web sign-in on its way through a provider (GET /auth/oauth/{provider}/authorize to its callback), kept
 * here rather than in a cookie (mobile webviews lose them): the state (128+ random bits) as SHA-256, and
 * everything the callback needs. The callback claims it with one DELETE … RETURNING: single use.
 */
export const oauthStates = sqliteTable(
  "oauth_states",
  {
    stateHash: text("state_hash").primaryKey(),
    provider: text("provider").notNull(),
    // The app's: where the flow returns, its own state, and its PKCE challenge for the login code.
    redirectUri: text("redirect_uri").notNull(),
    appState: text("app_state"),
    codeChallenge: text("code_challenge").notNull(),
    // Ours with the provider: the PKCE verifier of the code exchange, and the nonce of the id_token.
    codeVerifier: text("code_verifier").notNull(),
    nonce: text("nonce").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (table) => [index("oauth_states_expires_at").on(table.expiresAt)],
);

/**
 * The one-time login code a web sign-in hands the app (as SHA-256), bound to the app's PKCE challenge: POST
 * /auth/oauth/token claims it with one DELETE … RETURNING, so it is spent whatever the verifier.
 */
export const oauthLoginCodes = sqliteTable(
  "oauth_login_codes",
  {
    codeHash: text("code_hash").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    // The account's sign-in epoch at the sign-in: a password set meanwhile voids the code (auth/core/gate.ts).
    signInEpoch: integer("sign_in_epoch").notNull(),
    provider: text("provider").notNull(),
    codeChallenge: text("code_challenge").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (table) => [index("oauth_login_codes_expires_at").on(table.expiresAt)],
);

/**
 * Counters of the whole deployment in fixed windows (an hour, or a day), one row per name: the failed
 * tries at codes of every account (see codeTryBudget), the mails the service sends (auth/limits/mail-budget.ts),
 * and per target address the e-mail change codes mailed to it and the tries at proving it: the limits
 * that hold across accounts where each account's own cannot. See auth/limits/windows.ts.
 */
export const deploymentWindows = sqliteTable("deployment_windows", {
  name: text("name").primaryKey(),
  windowStart: integer("window_start").notNull().default(0),
  count: integer("count").notNull().default(0),
});

export type User = typeof users.$inferSelect;
export type Session = typeof sessions.$inferSelect;
