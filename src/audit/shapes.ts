import * as v from "valibot";
import { cursorParam, limitParam, readCursor } from "../lib/pages";
import { EVENT_TYPES } from "./events";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "./policy";

/** The audit log's answers and queries, each defined once (handler types and /openapi.json). */

/** One event, as GET /auth/activity, GET /admin/audit and the webhooks show it. */
export const AuditEvent = v.object({
  id: v.pipe(v.string(), v.description("`evt_` and 32 hex digits; the webhook's `webhook-id`")),
  type: v.picklist(EVENT_TYPES),
  user_id: v.pipe(v.number(), v.integer()),
  actor: v.pipe(v.picklist(["user", "admin", "system"]), v.description("Who made the change")),
  at: v.pipe(v.string(), v.isoTimestamp()),
  ip: v.pipe(v.nullable(v.string()), v.description("The client's address cut to its /24 (IPv4) or /48 (IPv6)")),
  user_agent: v.nullable(v.string()),
  data: v.pipe(
    v.record(v.string(), v.unknown()),
    v.description(
      "What the type carries (`amr` of a sign-in, `reason` of a failure, addresses of a change…); never a password, code, token or secret",
    ),
  ),
});
export type AuditEventJson = v.InferOutput<typeof AuditEvent>;

export const EventPage = v.object({
  events: v.array(AuditEvent),
  next_cursor: v.pipe(v.nullable(v.string()), v.description("Pass as `cursor` for the next page; null: no more")),
});

/** An events page's cursor: the time and id of the last event of the previous page. */
export const readEventsCursor = (raw: string) => readCursor(raw, ["number", "string"] as const);

export const AuditMessage = {
  userId: "user_id must be a positive integer.",
  type: "type must be one of the event types (user.registered, user.signed_in, …).",
} as const;

export const ActivityQuery = v.object({
  limit: limitParam(MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE),
  cursor: cursorParam(readEventsCursor),
});

export const AuditQuery = v.object({
  user_id: v.optional(
    v.pipe(
      v.string(),
      v.check((raw) => /^[1-9]\d{0,15}$/.test(raw) && Number.isSafeInteger(Number(raw)), AuditMessage.userId),
      v.description("Only this account's events"),
      v.transform(Number),
    ),
  ),
  type: v.optional(v.pipe(v.picklist(EVENT_TYPES, AuditMessage.type), v.description("Only events of this type"))),
  limit: limitParam(MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE),
  cursor: cursorParam(readEventsCursor),
});
