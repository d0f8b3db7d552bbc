import { DAY, HOUR, MINUTE, SECOND } from "../lib/units";

/**
 * Every limit and lifetime of the audit log and its webhooks, in one place (settings a deployment changes are in
 * src/config/: AUDIT_RETENTION_DAYS, WEBHOOK_RETRY_BASE_SECONDS).
 */

/** Failed sign-ins of one account recorded as events in an hour; the last one counts those after it. */
export const FAILED_SIGN_INS_PER_HOUR = 20;

/** The window FAILED_SIGN_INS_PER_HOUR counts in. */
export const FAILED_SIGN_IN_WINDOW_MS = HOUR;

/** What an event keeps of a User-Agent header, as a session does. */
export const EVENT_USER_AGENT_CHARS = 200;

/** Events (or failed webhooks) one page of a list holds unless `limit` says otherwise, and at most. */
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

/** A receiver has this long to answer a delivery; after it the delivery has failed and is tried again. */
export const WEBHOOK_TIMEOUT_MS = 10 * SECOND;

/** A delivery is retried (its delay doubling from WEBHOOK_RETRY_BASE_SECONDS) for this long after its event. */
export const WEBHOOK_RETRY_WINDOW_MS = DAY;

/**
 * A delivery claims its event for this long: no other consumer sends it meanwhile. Past it (the consumer died) the
 * cron hands the event to the queue again.
 */
export const WEBHOOK_LEASE_MS = MINUTE;

/** The longest delay Cloudflare Queues takes for a message; a longer wait is sent in steps. */
export const MAX_QUEUE_DELAY_SECONDS = 12 * 60 * 60;

/** Events the cron hands to the queue in one run (the rest wait for the next). */
export const WEBHOOK_SWEEP_LIMIT = 500;
