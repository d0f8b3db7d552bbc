import * as v from "valibot";
import { cursorParam, limitParam, readCursor } from "../../lib/pages";
import { body } from "../../lib/validation";
import { MAX_EMAIL_LENGTH } from "../policy";
import { MAX_BAN_REASON_CHARS, MAX_USERS_PAGE, USERS_PAGE } from "./policy";

/** The admin API's requests and answers about accounts, each defined once (handler types and /openapi.json). */

const iso = (description: string) => v.pipe(v.string(), v.isoTimestamp(), v.description(description));
const isoOrNull = (description: string) =>
  v.pipe(v.nullable(v.pipe(v.string(), v.isoTimestamp())), v.description(description));

/** The admin API's 400 messages about accounts. */
export const BanMessage = {
  email: `email must be 1 to ${MAX_EMAIL_LENGTH} characters.`,
  until: "until must be an ISO 8601 time with a zone (2026-12-31T00:00:00Z), or null for a ban until an unban.",
  untilPast: "until must be in the future.",
  reason: `reason must be a text of 1 to ${MAX_BAN_REASON_CHARS} characters.`,
} as const;

/** An account as an operator sees it (GET /admin/users). */
export const AdminUser = v.object({
  id: v.pipe(v.number(), v.integer()),
  email: v.string(),
  verified: v.boolean(),
  created_at: iso("When the account was made"),
  banned_until: isoOrNull(
    "Suspended until then (9999-12-31T23:59:59.999Z: until an unban); null when not suspended (never, or the ban has passed)",
  ),
  has_password: v.boolean(),
  mfa: v.pipe(v.boolean(), v.description("Two-factor authentication (TOTP) is on")),
  passkeys: v.pipe(v.number(), v.integer(), v.description("How many passkeys the account has")),
  identities: v.pipe(v.array(v.string()), v.description("The sign-in providers linked to the account")),
  last_sign_in_at: isoOrNull("When a session was last opened for the account; null: never"),
});
export type AdminUserJson = v.InferOutput<typeof AdminUser>;

/** One live session of an account, as an operator sees it. */
export const AdminSession = v.object({
  id: v.string(),
  created_at: iso("The sign-in"),
  last_used_at: iso("The last sign-in or refresh"),
  amr: v.pipe(v.array(v.string()), v.description("How the user signed in (RFC 8176 values)")),
  user_agent: v.nullable(v.string()),
});

/** An account with its live sessions (GET /admin/users/{id}). */
export const AdminUserDetail = v.object({ ...AdminUser.entries, sessions: v.array(AdminSession) });
export type AdminUserDetailJson = v.InferOutput<typeof AdminUserDetail>;

export const AdminUserPage = v.object({
  users: v.array(AdminUser),
  next_cursor: v.pipe(v.nullable(v.string()), v.description("Pass as `cursor` for the next page; null: no more")),
});

/** A users page's cursor: the last id of the previous page. */
export const readUsersCursor = (raw: string) => readCursor(raw, ["number"] as const);

export const UsersQuery = v.object({
  email: v.optional(
    v.pipe(
      v.string(),
      v.check((raw) => raw.trim() !== "" && raw.length <= MAX_EMAIL_LENGTH, BanMessage.email),
      v.description(
        "An address, or the start of one: the accounts whose address is it or starts with it (compared trimmed, in NFC, lowercased)",
      ),
    ),
  ),
  limit: limitParam(MAX_USERS_PAGE, USERS_PAGE),
  cursor: cursorParam(readUsersCursor),
});

/** ISO 8601 with a date, a time and a zone (`Z` or `±hh:mm`), as the ban's `until` takes it. */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

export const BanBody = body({
  until: v.pipe(
    v.nullable(
      v.pipe(
        v.string(BanMessage.until),
        v.check((raw) => ISO_8601.test(raw) && !Number.isNaN(Date.parse(raw)), BanMessage.until),
      ),
    ),
    v.description("When the ban ends (ISO 8601 with a zone); null: until an unban"),
  ),
  reason: v.pipe(
    v.string(BanMessage.reason),
    v.check((raw) => raw.trim() !== "" && [...raw].length <= MAX_BAN_REASON_CHARS, BanMessage.reason),
    v.description("Why, for the audit log"),
  ),
});
