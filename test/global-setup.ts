import type { TestProject } from "vitest/node";
import { startOAuthPeers } from "./oauth/servers.ts";
import type { OAuthFixture } from "./oauth/types.ts";
import { startSmtpPeers } from "./smtp/servers.ts";
import type { SmtpFixture } from "./smtp/types.ts";
import { startWebhookReceiver } from "./webhooks/servers.ts";
import type { WebhookFixture } from "./webhooks/types.ts";

declare module "vitest" {
  export interface ProvidedContext {
    smtp: SmtpFixture;
    oauth: OAuthFixture;
    webhooks: WebhookFixture;
  }
}

/**
 * Starts the loopback SMTP peers, sign-in providers and webhook receiver once for the whole run and hands their
 * addresses to the workers.
 */
export default async function setup(project: TestProject) {
  const [smtp, oauth, webhooks] = await Promise.all([startSmtpPeers(), startOAuthPeers(), startWebhookReceiver()]);
  project.provide("smtp", smtp.fixture);
  project.provide("oauth", oauth.fixture);
  project.provide("webhooks", webhooks.fixture);
  return async () => {
    await Promise.all([smtp.stop(), oauth.stop(), webhooks.stop()]);
  };
}
