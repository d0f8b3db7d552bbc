import { DAY } from "../../lib/units";

/**
 * The fixed rules of sharing, in one place: routes, store, mail and docs read them from here (docs/sharing.md).
 */

/** Live public links one note may have at once (a 409 beyond); revoking one frees its place. */
export const MAX_LINKS_PER_NOTE = 10;

/** Random bytes in a public link's token: 256 bits, 43 URL-safe characters (base64url). */
export const LINK_TOKEN_BYTES = 32;

/** Shares one note may have at once, pending ones included (a 409 beyond). */
export const MAX_SHARES_PER_NOTE = 100;

/**
 * Addresses one owner may have the service mail a share to in any `SHARE_ADDRESS_WINDOW_MS`, counting each
 * address once (a 429 beyond): no account can use sharing to make the service mail strangers in bulk.
 */
export const NEW_SHARE_ADDRESSES_PER_DAY = 50;
export const SHARE_ADDRESS_WINDOW_MS = DAY;

/** Bodies of the share routes are a few short fields; anything larger is a 413 before it is read. */
export const SHARE_BODY_LIMIT_BYTES = 16 * 1024;
