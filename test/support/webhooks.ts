import { env } from "cloudflare:workers";
import type { Answer, Delivery } from "../webhooks/types";
import { eventually } from "./audit";

/** Settings under which a request's events of every type go to the outbox (the suite subscribes to one type only). */
export const ALL_EVENTS = { WEBHOOK_EVENTS: "*" };

/** Scripts how the loopback receiver answers the deliveries of account `userId`'s events, in turn. */
export async function scriptReceiver(userId: number, answers: Answer[]): Promise<void> {
  const response = await fetch(`${env.WEBHOOKS.control}/_test/script`, {
    method: "POST",
    body: JSON.stringify({ userId, answers }),
  });
  await response.body?.cancel();
}

/** Every delivery the receiver got with `webhook-id` `id` (or of account `userId`'s events), in order. */
export async function received(filter: { id: string } | { userId: number }): Promise<Delivery[]> {
  const query = "id" in filter ? `id=${encodeURIComponent(filter.id)}` : `user_id=${filter.userId}`;
  return (await fetch(`${env.WEBHOOKS.control}/_test/received?${query}`)).json();
}

/** Waits up to `ms` for the receiver to have `count` deliveries matching `filter`: what it has then. */
export async function deliveries(
  filter: { id: string } | { userId: number },
  count: number,
  ms = 10_000,
): Promise<Delivery[]> {
  const found = await eventually(async () => {
    const got = await received(filter);
    return got.length >= count ? got : undefined;
  }, ms);
  return found ?? received(filter);
}
