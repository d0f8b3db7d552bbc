import { SECOND, MINUTE, HOUR, DAY, KiB } from "../lib/units";

/**
 * Every lifetime and limit of the accounts area, in one place: the routes, their descriptions, the mails and the
 * docs read them from here (docs name them; no page restates a number this file holds). Settings a deployment
 * changes are in src/config/ instead.
 */

// Sessions

/** A session ends this long after its last refresh... */
export const SESSION_IDLE_MS = 30 * DAY;

/** ...and at the latest this long after its login. */
export const SESSION_ABSOLUTE_MS = 90 * DAY;

/** For this long after a refresh, the refresh token it replaced still refreshes (to the same new token). */
export const REFRESH_GRACE_MS = 10_000;

/** What is kept of a User-Agent header. */
export const USER_AGENT_CHARS = 200;

// Step-up

/**
 * Password re-checks of a session that may fail: the wrong one that reaches this many ends the session.
 * A stolen access token is no way to guess the password, and no way to lock the owner out either.
 */
export const PASSWORD_CHECKS_PER_SESSION = 5;

/**
 * An account without a password (made by a social sign-in) proves itself, where others give the password,
 * with a session opened this recently (or, while TOTP is on, with its code): a stolen refresh token that
 * keeps an old session going is not enough.
 */
export const RECENT_SIGN_IN_MS = 10 * MINUTE;

// Device tokens

/** A device token is good for this long after the sign-in that issued it; each sign-in renews it. */
export const DEVICE_TOKEN_TTL_SECONDS = (180 * DAY) / SECOND;

/** Failed logins that the stale device tokens of one account (see above) may have in an hour, together. */
export const STALE_DEVICE_FAILURES_PER_HOUR = 10;

// Login lockout

/** Login attempts (failed, or still being checked) that lock an address... */
export const LOGIN_FAILURES_BEFORE_LOCK = 10;

/** ...for this long. */
export const LOGIN_LOCK_MS = 15 * MINUTE;

/**
 * Wrong passwords after which a device of the owner (a valid device token, see devices.ts) is locked, for
 * DEVICE_LOCK_MS: a device is judged on its own failures, not on the address's.
 */
export const DEVICE_FAILURES_BEFORE_LOCK = 5;

export const DEVICE_LOCK_MS = 15 * MINUTE;

// Pending sign-ins (the second step)

export const MFA_TOKEN_TTL_MS = 5 * MINUTE;

export const MFA_TOKEN_TRIES = 5;

// Second factor

/**
 * Wrong codes an active factor takes in an hour, from any sign-in, client or session: past them its codes
 * are refused (the right one too) for the rest of the hour, and the owner is told once. Recovery codes
 * still work. Five tries per `mfa_token` bound one challenge, not the account; this bounds the account.
 */
export const WRONG_CODES_PER_HOUR = 10;

export const RECOVERY_CODE_COUNT = 10;

// One-time codes

/** The digits of an e-mailed code (the contract's: 100000 to 999999). */
export const CODE_DIGITS = 6;

/** Lifetime of a code. */
export const CODE_TTL_MS = 15 * MINUTE;

/** Tries after which a code is void, the right code included. */
export const MAX_CODE_ATTEMPTS = 5;

/** At most this many tries per account per hour at codes of one purpose, across codes. */
export const CODE_TRIES_PER_HOUR = 15;

// Mail to an account

/** At least this long between two mails to one account (codes of any purpose, registration included). */
export const MAIL_COOLDOWN_MS = MINUTE;

/** At most this many such mails per account per hour. */
export const MAILS_PER_HOUR = 5;

/**
 * Reset mails (forgot-password) have an allowance of their own, apart from the account's other mails:
 * at most this many an hour to one address, whoever asks (the cap against mail-bombing)...
 */
export const RESET_MAILS_PER_HOUR = 5;

/**
 * ...and of those at most this many an hour, a MAIL_COOLDOWN_MS apart, for any one requesting client
 * (an IPv4 address or an IPv6 /64): one client cannot use up the owner's reset mails.
 */
export const RESET_MAILS_PER_CLIENT_PER_HOUR = 2;

// E-mail change

/**
 * E-mail change codes mailed to one target address in an hour, whatever the number of accounts asking:
 * the service cannot be used to flood an outside mailbox with codes.
 */
export const EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR = 3;

/**
 * Wrong tries at proving one target address (confirm-email-change) in an hour, all accounts together:
 * below the 3 codes × 5 tries the codes alone would allow, so five accounts asking for one address do
 * not get five times the guesses.
 */
export const EMAIL_CHANGE_TRIES_PER_TARGET_PER_HOUR = 10;

/** A confirmed change's old address may undo it for this long (email-revert.ts). */
export const EMAIL_CHANGE_REVERT_TTL_MS = 7 * DAY;

// Clean-up

/** An account still unverified this long after registering is deleted, and its address is free again. */
export const UNVERIFIED_ACCOUNT_TTL_MS = 7 * DAY;

/** A run of failed logins nobody has added to for this long is forgotten (and its row deleted). */
export const LOGIN_FAILURES_KEPT_MS = DAY;

// Passkeys

/** A ceremony's challenge is good for this long after its options (the options' `timeout` too). */
export const PASSKEY_CHALLENGE_TTL_MS = 5 * MINUTE;

/** Passkeys one account may have. */
/** The most characters (code points) a passkey's name holds, after trimming. */
export const MAX_PASSKEY_NAME_CHARS = 64;

/** The random bytes of a passkey challenge and of an account's WebAuthn user handle. */
export const PASSKEY_CHALLENGE_BYTES = 32;

export const MAX_PASSKEYS = 10;

/** Both platforms fetch these again now and then; an hour keeps a change of apps quick to reach them. */
export const WELL_KNOWN_MAX_AGE_MS = HOUR;

// Social sign-in

/** A state lives this long: the time a person has to sign in at the provider. */
export const STATE_TTL_MS = 10 * MINUTE;

/** A login code lives this long: the app exchanges it at once. */
export const LOGIN_CODE_TTL_MS = 60 * SECOND;

/** The longest app `state` kept and handed back. */
export const MAX_APP_STATE_CHARS = 512;

/** A provider's answer may take this long; after it the sign-in fails as unavailable. */
export const PROVIDER_TIMEOUT_MS = 10 * SECOND;

/** A discovery document is used this long before it is fetched again. */
export const DISCOVERY_TTL_MS = HOUR;

/**
 * A key set is used this long before it is fetched again, and fetched again early for an unknown key at most this
 * often.
 */
export const JWKS_TTL_MS = 10 * MINUTE;

export const JWKS_REFETCH_MS = 30 * SECOND;

/** How long a signed client secret is valid. */
export const APPLE_CLIENT_SECRET_TTL_MS = HOUR;

/** A client secret this close to expiring is signed anew, so none is sent that could expire on the way. */
export const APPLE_CLIENT_SECRET_RENEW_MS = 10 * MINUTE;

/** Clocks may differ by this much (seconds) when `exp` and `iat` are checked. */
export const CLOCK_TOLERANCE_SECONDS = 30;

// Turnstile

/** How long siteverify may take before the request is refused as unverifiable. */
export const TURNSTILE_TIMEOUT_MS = 5 * SECOND;

// Requests

/** Accounts bodies are a few short fields; 16 KiB is far above any real one. */
export const AUTH_BODY_LIMIT_BYTES = 16 * KiB;

export const MAX_EMAIL_LENGTH = 254;
