import { HOUR } from "../../lib/units";

/**
 * The fixed rules of attachments, in one place: routes, store, clean-up and docs read them from here. The
 * limits a deployment chooses (ATTACHMENT_MAX_BYTES, ATTACHMENT_QUOTA_BYTES, ATTACHMENT_URL_TTL_SECONDS) are
 * settings, read in src/config/attachments.ts.
 */

/** A note holds at most this many attachments, uploads under way included (a 409 beyond). */
export const MAX_ATTACHMENTS_PER_NOTE = 100;

/** The longest `filename`, in characters (Unicode code points), as sent (a 400 beyond). */
export const MAX_FILENAME_CHARS = 255;

/** The name of an attachment uploaded without one, or with one that nothing is left of once cleaned. */
export const DEFAULT_FILENAME = "file";

/**
 * An upload must finish within this time of its reservation (408 otherwise, nothing stored). The hourly
 * cron then takes a reservation older than this for an upload that died (its Worker stopped): it deletes the
 * row, so its bytes leave the quota, and the R2 object it may have left.
 */
export const UPLOAD_WINDOW_MS = HOUR;

/**
 * How long the key of a deleted attachment stays in `attachment_removals`, its R2 object deleted again at
 * each cron run meanwhile: longer than the upload window, so that an upload whose row was deleted while its
 * bytes were still arriving (the note or the account went) cannot leave an object after the last run.
 */
export const REMOVALS_KEPT_MS = 2 * UPLOAD_WINDOW_MS;

/** Keys per R2 delete call (R2's own maximum) and per page of the removal queue. */
export const REMOVALS_PER_CALL = 1000;

/** R2 delete calls one cron run makes at most; a longer queue is finished by the next runs. */
export const REMOVAL_CALLS_PER_RUN = 50;
