import type { MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { recordedNetworkOf } from "../lib/client-key";
import type { AppEnv } from "../types";
import type { Actor } from "./events";
import { EVENT_USER_AGENT_CHARS } from "./policy";
import { enqueue } from "./webhooks/queue";
import { trailOf } from "./writer";

/** The User-Agent as an event keeps it: control characters out, white space folded, at most EVENT_USER_AGENT_CHARS. */
export function eventUserAgent(header: string | undefined): string | null {
  const text = (header ?? "").replace(/[\p{C}\s]+/gu, " ").trim();
  return text === "" ? null : [...text].slice(0, EVENT_USER_AGENT_CHARS).join("");
}

/**
 * The audit log's writer for each request of an area (index.ts hands it to the accounts area, "user", and to the
 * admin API, "admin"): `c.var.audit`, with the client's network and User-Agent. Once the handler has answered, every
 * batch it ran has committed or failed: the events it put in the webhook outbox go to the queue then, never before
 * (one that was not written is found missing by the consumer and dropped).
 */
export function auditTrail(actor: Actor): MiddlewareHandler<AppEnv> {
  return createMiddleware<AppEnv>(async (c, next) => {
    const queued: string[] = [];
    const context = {
      db: c.var.db,
      webhooks: c.var.config.webhooks,
      actor,
      ip: recordedNetworkOf(c.req.header("CF-Connecting-IP")),
      userAgent: eventUserAgent(c.req.header("User-Agent")),
    };
    c.set("audit", trailOf(context, queued));
    await next();
    if (queued.length > 0)
      c.executionCtx.waitUntil(
        enqueue(
          c.env.WEBHOOK_QUEUE,
          queued.map((id) => ({ id, attempt: 0 })),
          c.var.log,
        ),
      );
  });
}
