import { Hono, type Context } from "hono";
import { adminError, adminErrorAnswer, adminErrors, adminJson, AdminMessage, adminOperation } from "../../lib/admin";
import { badJson, describeRoute, ref } from "../../lib/describe";
import { InvalidCursor, limitMessage, writeCursor } from "../../lib/pages";
import { jsonBody, queryParams } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { isSuspended, type OwnedElsewhere } from "../core/accounts";
import { endSessions } from "../core/sessions";
import { normalizeEmail } from "../requests";
import { BanBody, BanMessage, readUsersCursor, UsersQuery, type AdminUserJson } from "./shapes";
import { banUser, deleteUser, signOutUser, unbanUser, userDetail, usersPage, type UserRow } from "./store";
import { MAX_BAN_REASON_CHARS, MAX_USERS_PAGE, USERS_PAGE } from "./policy";

/**
 * The admin API's accounts (/admin/users, behind the admin token: lib/admin.ts): list and read them, ban and unban,
 * sign out, delete. A ban and a sign-out end sessions through the one door (core/sessions.ts, endSessions), so the
 * live sockets close too; every change records its event in its own batch. See docs/operations.md, "Admin API".
 */

const iso = (ms: number) => new Date(ms).toISOString();

/** An account's row as the admin API shows it; a ban that has passed shows as none. */
function userJson(row: UserRow, now: number): AdminUserJson {
  const identities = (JSON.parse(row.identities) as string[]).sort();
  return {
    id: row.id,
    email: row.email,
    verified: row.isVerified,
    created_at: iso(row.createdAt),
    banned_until: isSuspended(row.bannedUntil, now) ? iso(row.bannedUntil!) : null,
    has_password: Boolean(row.hasPassword),
    mfa: Boolean(row.mfa),
    passkeys: row.passkeys,
    identities,
    last_sign_in_at: row.lastSignInAt === null ? null : iso(row.lastSignInAt),
  };
}

/** The `{id}` of a path: a positive decimal integer within JavaScript's safe range, or undefined. */
function userIdOf(c: Context): number | undefined {
  const raw = c.req.param("id") ?? "";
  return /^[1-9]\d{0,15}$/.test(raw) && Number.isSafeInteger(Number(raw)) ? Number(raw) : undefined;
}

const idParameter = [
  { name: "id", in: "path", required: true, description: "The account's id", schema: { type: "integer", minimum: 1 } },
];
const badId = { "400": adminErrorAnswer("Not a positive integer", AdminMessage.invalidUserId) };
const notFound = {
  "404": adminErrorAnswer("No account has this id (or ADMIN_TOKEN is not set)", AdminMessage.userNotFound),
};

/** Reading accounts: the list, and one account with its sessions. */
const reads = new Hono<AppEnv>()
  .get(
    "/users",
    describeRoute({
      ...adminOperation,
      summary: "List accounts",
      description: `By id. \`email\` keeps the accounts whose address is it or starts with it; pages of \`limit\` (default ${USERS_PAGE}).`,
      responses: {
        "200": adminJson("A page of accounts", ref("AdminUserPage")),
        "400": adminErrorAnswer("A malformed parameter", BanMessage.email, limitMessage(MAX_USERS_PAGE), InvalidCursor),
        ...adminErrors,
      },
    }),
    queryParams(UsersQuery),
    async (c) => {
      const { email, limit = USERS_PAGE, cursor } = c.req.valid("query");
      const after = cursor === undefined ? undefined : readUsersCursor(cursor)![0];
      const now = Date.now();
      const rows = await usersPage(c.var.db, { email: email && normalizeEmail(email), after, limit });
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      const next = rows.length > limit && last ? writeCursor([last.id]) : null;
      return c.json({ users: page.map((row) => userJson(row, now)), next_cursor: next }, 200);
    },
  )

  .get(
    "/users/:id",
    describeRoute({
      ...adminOperation,
      summary: "One account and its live sessions",
      parameters: idParameter,
      responses: { "200": adminJson("The account", ref("AdminUserDetail")), ...badId, ...adminErrors, ...notFound },
    }),
    async (c) => {
      const userId = userIdOf(c);
      if (userId === undefined) return adminError(c, 400, AdminMessage.invalidUserId);
      const now = Date.now();
      const found = await userDetail(c.var.db, userId, now);
      if (!found) return adminError(c, 404, AdminMessage.userNotFound);
      const sessions = found.sessions.map((session) => ({
        id: session.id,
        created_at: iso(session.createdAt),
        last_used_at: iso(session.lastUsedAt),
        amr: session.amr.split(" "),
        user_agent: session.userAgent,
      }));
      return c.json({ ...userJson(found.user, now), sessions }, 200);
    },
  );

/** Suspending an account, ending the suspension, signing it out. */
const actions = new Hono<AppEnv>()
  .post(
    "/users/:id/ban",
    describeRoute({
      ...adminOperation,
      summary: "Suspend an account",
      description:
        "At once, every session of the account ends (its access and refresh tokens answer 401, its live sockets close with 4001), and every " +
        "way in (password, code, passkey, social sign-in) answers 403 until `until` passes or an unban. Records `user.banned`; banning again " +
        `replaces the end and the reason (at most ${MAX_BAN_REASON_CHARS} characters).`,
      parameters: idParameter,
      requestExample: { until: "2026-12-31T00:00:00Z", reason: "Spam" },
      responses: {
        "200": adminJson("Suspended: the account as it is now", ref("AdminUser")),
        "400": adminErrorAnswer(
          "Malformed body or id, or an end in the past",
          BanMessage.until,
          BanMessage.untilPast,
          BanMessage.reason,
          AdminMessage.invalidUserId,
          ...badJson,
        ),
        ...adminErrors,
        ...notFound,
      },
    }),
    jsonBody(BanBody),
    async (c) => {
      const userId = userIdOf(c);
      if (userId === undefined) return adminError(c, 400, AdminMessage.invalidUserId);
      const { until: raw, reason } = c.req.valid("json");
      const now = Date.now();
      const until = raw === null ? null : Date.parse(raw);
      if (until !== null && until <= now) return adminError(c, 400, BanMessage.untilPast);
      const user = await endSessions(
        c,
        (ending) => banUser(ending, c.var.audit, { userId, until, reason }),
        (banned) => banned && userId,
      );
      if (!user) return adminError(c, 404, AdminMessage.userNotFound);
      c.var.log.warn("user_banned", { userId, until: raw });
      return c.json(userJson(user, now), 200);
    },
  )

  .post(
    "/users/:id/unban",
    describeRoute({
      ...adminOperation,
      summary: "End an account's suspension",
      description: "Records `user.unbanned` when a ban held.",
      parameters: idParameter,
      responses: {
        "200": adminJson("The account as it is now", ref("AdminUser")),
        ...badId,
        ...adminErrors,
        ...notFound,
      },
    }),
    async (c) => {
      const userId = userIdOf(c);
      if (userId === undefined) return adminError(c, 400, AdminMessage.invalidUserId);
      const now = Date.now();
      const user = await unbanUser(c.var.db, c.var.audit, userId, now);
      if (!user) return adminError(c, 404, AdminMessage.userNotFound);
      c.var.log.info("user_unbanned", { userId });
      return c.json(userJson(user, now), 200);
    },
  )

  .post(
    "/users/:id/sign-out",
    describeRoute({
      ...adminOperation,
      summary: "End every session of an account",
      description: "As a ban does, without one: the account may sign in again. Records `user.signed_out_by_admin`.",
      parameters: idParameter,
      responses: { "204": { description: "Signed out" }, ...badId, ...adminErrors, ...notFound },
    }),
    async (c) => {
      const userId = userIdOf(c);
      if (userId === undefined) return adminError(c, 400, AdminMessage.invalidUserId);
      const found = await endSessions(
        c,
        (ending) => signOutUser(ending, c.var.audit, userId),
        (ok) => ok && userId,
      );
      if (!found) return adminError(c, 404, AdminMessage.userNotFound);
      c.var.log.info("user_signed_out_by_admin", { userId });
      return c.body(null, 204);
    },
  );

/** Deleting an account, with what other areas keep for it (`ownedElsewhere`, handed in at wiring). */
function deletion(ownedElsewhere: OwnedElsewhere) {
  return new Hono<AppEnv>().delete(
    "/users/:id",
    describeRoute({
      ...adminOperation,
      summary: "Delete an account",
      description:
        "As the owner's own deletion does: the account, its sessions, codes, factors and notes. Records `user.deleted`.",
      parameters: idParameter,
      responses: { "204": { description: "Deleted" }, ...badId, ...adminErrors, ...notFound },
    }),
    async (c) => {
      const userId = userIdOf(c);
      if (userId === undefined) return adminError(c, 400, AdminMessage.invalidUserId);
      const deleted = await endSessions(
        c,
        (ending) => deleteUser(ending, c.var.audit, userId, ownedElsewhere),
        (ok) => ok && userId,
      );
      if (!deleted) return adminError(c, 404, AdminMessage.userNotFound);
      c.var.log.warn("user_deleted_by_admin", { userId });
      return c.body(null, 204);
    },
  );
}

export function adminUsers(ownedElsewhere: OwnedElsewhere) {
  return new Hono<AppEnv>().route("/", reads).route("/", actions).route("/", deletion(ownedElsewhere));
}
