import type { TestProject } from "vitest/node";
import { startOAuthPeers } from "./oauth/servers.ts";
import type { OAuthFixture } from "./oauth/types.ts";
import { startSmtpPeers } from "./smtp/servers.ts";
import type { SmtpFixture } from "./smtp/types.ts";

declare module "vitest" {
  export interface ProvidedContext {
    smtp: SmtpFixture;
    oauth: OAuthFixture;
  }
}

/**
 * Starts the loopback SMTP peers and sign-in providers once for the whole run and hands their addresses to the workers.
 */
export default async function setup(project: TestProject) {
  const [smtp, oauth] = await Promise.all([startSmtpPeers(), startOAuthPeers()]);
  project.provide("smtp", smtp.fixture);
  project.provide("oauth", oauth.fixture);
  return async () => {
    await Promise.all([smtp.stop(), oauth.stop()]);
  };
}
