import type { TestProject } from "vitest/node";
import { startSmtpPeers, type SmtpFixture } from "./smtp/servers";

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
