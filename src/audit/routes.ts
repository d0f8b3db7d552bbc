import { and, eq } from "drizzle-orm";
import { Hono } from "hono";
import { invalidAccessToken, requireAccessToken, sessionCheck, unauthorized } from "../auth/caller";
import { adminErrorAnswer, adminErrors, adminJson, adminOperation } from "../lib/admin";
import { allowedMethods, methodNotAllowed } from "../lib/http";
import { bearerOnly, describeRoute, ref, text } from "../lib/describe";
import { InvalidCursor, limitMessage } from "../lib/pages";
import { queryParams } from "../lib/validation";
import type { AppEnv } from "../types";
import { auditEvents } from "./schema";
import { ActivityQuery, AuditMessage, AuditQuery, readEventsCursor } from "./shapes";
import { eventsAnswer, eventsPage } from "./store";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "./policy";

/**
 * Reading the audit log: each account its own events (GET /auth/activity, mounted under /auth by index.ts, answering
 * as the accounts area does), and an operator every account's (GET /admin/audit, behind the admin token).
 */

export function activityRoutes() {
  const activity = new Hono<AppEnv>().get(
    "/activity",
    describeRoute({
      tags: ["accounts"],
      security: bearerOnly,
      summary: "Your recent security activity",
      description:
        "The caller's own audit events (sign-ins, failed sign-ins, password, address, factors, passkeys, providers, sessions…), newest first, " +
        `in pages of \`limit\` (default ${DEFAULT_PAGE_SIZE}). Never another account's.`,
      responses: {
        "200": adminJson("A page of events", ref("EventPage")),
        "400": text("A malformed parameter", limitMessage(MAX_PAGE_SIZE), InvalidCursor),
        "401": text("Missing, invalid or expired access token, or its session has ended", invalidAccessToken),
      },
    }),
    requireAccessToken,
    queryParams(ActivityQuery),
    async (c) => {
      const { limit = DEFAULT_PAGE_SIZE, cursor } = c.req.valid("query");
      const { db, caller } = c.var;
      const after = cursor === undefined ? undefined : readEventsCursor(cursor);
      // An account's events, less those of a deleted account that had the same id before it (`closed`).
      const own = and(eq(auditEvents.userId, caller.userId), eq(auditEvents.closed, false));
      const [[live], rows] = await db.batch([
        sessionCheck(db, caller, Date.now()),
        eventsPage(db, own, { after, limit }),
      ]);
      if (!live) return unauthorized(c);
      return c.json(eventsAnswer(rows, limit), 200);
    },
  );
  for (const [path, allow] of allowedMethods(activity.routes)) activity.all(path, methodNotAllowed(allow));
  return activity;
}

export const auditAdmin = new Hono<AppEnv>().get(
  "/audit",
  describeRoute({
    ...adminOperation,
    summary: "The audit log",
    description: `Every account's events, newest first; \`user_id\` and \`type\` narrow it. Pages of \`limit\` (default ${DEFAULT_PAGE_SIZE}).`,
    responses: {
      "200": adminJson("A page of events", ref("EventPage")),
      "400": adminErrorAnswer(
        "A malformed parameter",
        AuditMessage.userId,
        AuditMessage.type,
        limitMessage(MAX_PAGE_SIZE),
        InvalidCursor,
      ),
      ...adminErrors,
    },
  }),
  queryParams(AuditQuery),
  async (c) => {
    const { user_id: userId, type, limit = DEFAULT_PAGE_SIZE, cursor } = c.req.valid("query");
    const after = cursor === undefined ? undefined : readEventsCursor(cursor);
    const filter = and(
      userId === undefined ? undefined : eq(auditEvents.userId, userId),
      type === undefined ? undefined : eq(auditEvents.type, type),
    );
    const rows = await eventsPage(c.var.db, filter, { after, limit });
    return c.json(eventsAnswer(rows, limit), 200);
  },
);
