/** What the loopback webhook receiver shares with the tests running in the Workers runtime. */

export type WebhookFixture = {
  /** Where the service POSTs its webhooks (WEBHOOK_URL in vitest.config.ts). */
  url: string;
  /** The receiver's test controls: POST /_test/script, GET /_test/received. */
  control: string;
  /** The WEBHOOK_SECRET the service signs with. */
  secret: string;
};

/** How the receiver answers, in turn, the deliveries of one account's events: a status, or no answer at all. */
export type Answer = number | "hang";

export interface WebhookScript {
  userId: number;
  answers: Answer[];
}

/** One delivery as the receiver got it: the Standard Webhooks headers, the raw body, and what it answered. */
export interface Delivery {
  id: string;
  timestamp: string;
  signature: string;
  contentType: string;
  body: string;
  answered: Answer;
  receivedAt: number;
}
