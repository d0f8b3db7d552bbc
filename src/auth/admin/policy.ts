/** The admin API's limits on accounts (the accounts area's own are in ../policy.ts). */

/** Accounts one page of GET /admin/users holds unless `limit` says otherwise, and at most. */
export const USERS_PAGE = 50;
export const MAX_USERS_PAGE = 100;

/** The longest reason a ban takes. */
export const MAX_BAN_REASON_CHARS = 500;
