import * as v from "valibot";
import { Hono } from "hono";
import { adminError, adminErrorAnswer, adminErrors, adminJson, AdminMessage, adminOperation } from "../../lib/admin";
import { describeRoute, ref } from "../../lib/describe";
import { cursorParam, InvalidCursor, limitMessage, limitParam, readCursor, writeCursor } from "../../lib/pages";
import { queryParams } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, WEBHOOK_RETRY_WINDOW_MS } from "../policy";
import { HOUR } from "../../lib/units";
import { enqueue } from "./queue";
import { failedPage, retryFailed } from "./store";

/**
 * The deliveries that failed for good (every attempt of WEBHOOK_RETRY_WINDOW_MS), listed for an operator and sent
 * again on request (/admin/webhooks/failed, behind the admin token).
 */

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A failed delivery, as an operator sees it. */
export const FailedWebhook = v.object({
  id: v.pipe(v.string(), v.description("The event's id: the `webhook-id` of every attempt")),
  type: v.string(),
  user_id: v.pipe(v.number(), v.integer()),
  event_at: v.pipe(v.string(), v.isoTimestamp()),
  attempts: v.pipe(v.number(), v.integer()),
  last_attempt_at: v.nullable(v.pipe(v.string(), v.isoTimestamp())),
  last_status: v.pipe(v.nullable(v.number()), v.description("The receiver's last status; null when it did not answer")),
  last_error: v.nullable(v.string()),
  failed_at: v.pipe(v.string(), v.isoTimestamp()),
});

export const FailedWebhookPage = v.object({ webhooks: v.array(FailedWebhook), next_cursor: v.nullable(v.string()) });

const readFailedCursor = (raw: string) => readCursor(raw, ["number", "string"] as const);

const FailedQuery = v.object({
  limit: limitParam(MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE),
  cursor: cursorParam(readFailedCursor),
});

export const webhooksAdmin = new Hono<AppEnv>()
  .get(
    "/webhooks/failed",
    describeRoute({
      ...adminOperation,
      summary: "Failed webhook deliveries",
      description: `Events no attempt delivered within ${WEBHOOK_RETRY_WINDOW_MS / HOUR} hours, the latest failure first; kept as long as their events.`,
      responses: {
        "200": adminJson("A page of failed deliveries", ref("FailedWebhookPage")),
        "400": adminErrorAnswer("A malformed parameter", limitMessage(MAX_PAGE_SIZE), InvalidCursor),
        ...adminErrors,
      },
    }),
    queryParams(FailedQuery),
    async (c) => {
      const { limit = DEFAULT_PAGE_SIZE, cursor } = c.req.valid("query");
      const after = cursor === undefined ? undefined : readFailedCursor(cursor);
      const rows = await failedPage(c.var.db, { after, limit });
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return c.json(
        {
          webhooks: page.map(({ delivery, event }) => ({
            id: event.id,
            type: event.type,
            user_id: event.userId,
            event_at: new Date(event.at).toISOString(),
            attempts: delivery.attempts,
            last_attempt_at: iso(delivery.lastAttemptAt),
            last_status: delivery.lastStatus,
            last_error: delivery.lastError,
            failed_at: iso(delivery.failedAt) ?? new Date(event.at).toISOString(),
          })),
          next_cursor:
            rows.length > limit && last ? writeCursor([last.delivery.failedAt ?? 0, last.delivery.eventId]) : null,
        },
        200,
      );
    },
  )

  .post(
    "/webhooks/failed/:id/retry",
    describeRoute({
      ...adminOperation,
      summary: "Send a failed delivery again",
      description:
        `The event goes back to the queue now, with the same \`webhook-id\`, and is retried as a new event is (doubling delays, for ${WEBHOOK_RETRY_WINDOW_MS / HOUR} hours from now). ` +
        "202: accepted; the delivery happens after the answer.",
      parameters: [
        { name: "id", in: "path", required: true, description: "A failed delivery's `id`", schema: { type: "string" } },
      ],
      responses: {
        "202": adminJson("Queued", {
          type: "object",
          required: ["id", "state"],
          properties: { id: { type: "string" }, state: { type: "string", enum: ["pending"] } },
        }),
        ...adminErrors,
        "404": adminErrorAnswer(
          "No failed delivery has this id (or ADMIN_TOKEN is not set)",
          AdminMessage.webhookNotFound,
        ),
      },
    }),
    async (c) => {
      const id = c.req.param("id");
      if (!(await retryFailed(c.var.db, id, Date.now()))) return adminError(c, 404, AdminMessage.webhookNotFound);
      c.var.log.info("webhook_retry_requested", { eventId: id });
      // After the write that put it back: a lost message is the cron's to hand over again.
      c.executionCtx.waitUntil(enqueue(c.env.WEBHOOK_QUEUE, [{ id, attempt: 0 }], c.var.log));
      return c.json({ id, state: "pending" as const }, 202);
    },
  );
