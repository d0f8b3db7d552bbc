import type { Logger } from "../../lib/log";
import { describeError } from "../../lib/log";

/**
 * What the webhook queue carries: an event's id and the attempt the message is for. A message whose attempt is no
 * longer the event's next one (a copy, or the cron's hand-over of an event the queue still had) is dropped.
 */
export interface DeliveryMessage {
  id: string;
  attempt: number;
}

/** Whether a queue message's body is one of ours. */
export function isDeliveryMessage(body: unknown): body is DeliveryMessage {
  return (
    typeof body === "object" &&
    body !== null &&
    "id" in body &&
    typeof body.id === "string" &&
    "attempt" in body &&
    typeof body.attempt === "number"
  );
}

/**
 * Hands deliveries to the queue, after the writes that recorded them have committed; a failure is only logged: the
 * cron hands over what is due and was not delivered (docs/operations.md, "Webhooks").
 */
export async function enqueue(
  queue: Queue,
  messages: readonly DeliveryMessage[],
  log: Logger,
  delaySeconds = 0,
): Promise<boolean> {
  if (messages.length === 0) return true;
  try {
    await queue.sendBatch(messages.map((body) => ({ body, ...(delaySeconds > 0 && { delaySeconds }) })));
    return true;
  } catch (err) {
    log.warn("webhook_enqueue_failed", { events: messages.length, ...describeError(err) });
    return false;
  }
}
