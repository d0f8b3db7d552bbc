/** The operators' settings (src/config/operators.ts): ADMIN_TOKEN, WEBHOOK_*, AUDIT_RETENTION_DAYS, read and checked. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ConfigError, readConfig } from "../../src/config";
import { eventsOf, outboxRow } from "../support/audit";
import { account, logIn } from "../support/accounts";
import { userIdOf } from "../support/admin";
import { callWithEnv, PASSWORD } from "../support/app";

const SECRET = `whsec_${btoa(String.fromCharCode(...new Uint8Array(32).fill(7)))}`;

function read(settings: Partial<Env> & { ADMIN_TOKEN?: string; WEBHOOK_SECRET?: string }) {
  return readConfig({ ...env, ...settings });
}

describe("ADMIN_TOKEN", () => {
  it("is unset when empty or blank, a problem under 32 characters, and the token from 32 on", () => {
    expect(read({ ADMIN_TOKEN: undefined }).adminToken).toBeUndefined();
    expect(read({ ADMIN_TOKEN: "  " }).adminToken).toBeUndefined();
    expect(read({ ADMIN_TOKEN: "x".repeat(31) }).adminToken).toEqual({
      problem: "ADMIN_TOKEN must be at least 32 characters",
    });
    expect(read({ ADMIN_TOKEN: "x".repeat(32) }).adminToken).toBe("x".repeat(32));
  });
});

describe("WEBHOOK_*", () => {
  it("is off without WEBHOOK_URL", () => {
    expect(read({ WEBHOOK_URL: "" }).webhooks).toBeUndefined();
  });

  it("takes an https URL, or http on a loopback host, with a Standard Webhooks secret", () => {
    for (const url of ["https://hooks.example/in?x=1", "http://127.0.0.1:9000/hook", "http://localhost/hook"]) {
      const webhooks = read({ WEBHOOK_URL: url, WEBHOOK_SECRET: SECRET, WEBHOOK_EVENTS: "*" }).webhooks;
      expect(webhooks).toEqual({
        url: new URL(url).href,
        key: new Uint8Array(32).fill(7),
        events: "*",
        retryBaseSeconds: 1,
      });
    }
  });

  it.each([
    [
      { WEBHOOK_URL: "http://hooks.example/in" },
      "WEBHOOK_URL must be an https URL (http only on a loopback host), without a fragment",
    ],
    [
      { WEBHOOK_URL: "https://hooks.example/in#x" },
      "WEBHOOK_URL must be an https URL (http only on a loopback host), without a fragment",
    ],
    [
      { WEBHOOK_URL: "not a url" },
      "WEBHOOK_URL must be an https URL (http only on a loopback host), without a fragment",
    ],
    [
      { WEBHOOK_SECRET: undefined },
      "WEBHOOK_SECRET must be whsec_ followed by 24 to 64 bytes in base64 (Standard Webhooks)",
    ],
    [
      { WEBHOOK_SECRET: "whsec_c2hvcnQ=" },
      "WEBHOOK_SECRET must be whsec_ followed by 24 to 64 bytes in base64 (Standard Webhooks)",
    ],
    [
      { WEBHOOK_SECRET: btoa("x".repeat(32)) },
      "WEBHOOK_SECRET must be whsec_ followed by 24 to 64 bytes in base64 (Standard Webhooks)",
    ],
    [
      { WEBHOOK_EVENTS: "user.signed_in, user.exploded" },
      "WEBHOOK_EVENTS must be * or event types separated by commas; unknown: user.exploded",
    ],
    [{ WEBHOOK_RETRY_BASE_SECONDS: "0" }, "WEBHOOK_RETRY_BASE_SECONDS must be an integer from 1 to 86400"],
    [{ WEBHOOK_RETRY_BASE_SECONDS: "1.5" }, "WEBHOOK_RETRY_BASE_SECONDS must be an integer from 1 to 86400"],
  ])("names the problem of %j", (settings, problem) => {
    expect(read({ WEBHOOK_SECRET: SECRET, ...settings }).webhooks).toEqual({ problem });
  });

  it("takes a list of event types, and * or nothing for all of them; the retry base defaults to 30", () => {
    const webhooks = read({
      WEBHOOK_SECRET: SECRET,
      WEBHOOK_EVENTS: " user.registered ,user.deleted,",
      WEBHOOK_RETRY_BASE_SECONDS: "",
    }).webhooks;
    expect(webhooks).toMatchObject({ events: ["user.registered", "user.deleted"], retryBaseSeconds: 30 });
    expect(read({ WEBHOOK_SECRET: SECRET, WEBHOOK_EVENTS: "" }).webhooks).toMatchObject({ events: "*" });
  });

  it("keeps every event for delivery while the settings are unusable, and the service answers as usual", async () => {
    const email = await account();
    const login = await callWithEnv(
      { WEBHOOK_SECRET: "not a secret", WEBHOOK_EVENTS: "user.banned" },
      "POST",
      "/auth/login",
      {
        email,
        password: PASSWORD,
      },
    );
    expect(login.status).toBe(200);
    const [event] = await eventsOf(await userIdOf(email), "user.signed_in");
    expect(await outboxRow(event!.id)).toMatchObject({ event_id: event!.id });
    expect((await logIn(email)).token).toBeTruthy();
  });
});

describe("AUDIT_RETENTION_DAYS", () => {
  it("defaults to 90 and must be a whole number of days from 1", () => {
    expect(read({ AUDIT_RETENTION_DAYS: "" }).auditRetentionDays).toBe(90);
    expect(read({ AUDIT_RETENTION_DAYS: "7" }).auditRetentionDays).toBe(7);
    expect(() => read({ AUDIT_RETENTION_DAYS: "0" })).toThrow(ConfigError);
  });
});
