import type { TestProject } from "vitest/node";
import { startSmtpPeers } from "./smtp/servers.ts";
import type { SmtpFixture } from "./smtp/types.ts";

declare module "vitest" {
  export interface ProvidedContext {
    smtp: SmtpFixture;
  }
}

/** Starts the loopback SMTP peers once for the whole run and hands their ports to the workers. */
export default async function setup(project: TestProject) {
  const { fixture, stop } = await startSmtpPeers();
  project.provide("smtp", fixture);
  return stop;
}
