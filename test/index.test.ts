import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuthMessage } from "../src/auth/messages";
import { verifiedAccount } from "./support/accounts";
import { call, callWithEnv, JSON_TYPE, PASSWORD, TEXT, textOf } from "./support/app";

function captureErrorLogs() {
  const lines: string[] = [];
  vi.spyOn(console, "error").mockImplementation((line: unknown) => lines.push(String(line)));
  return lines;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("unknown paths", () => {
  it.each(["/nope", "/docs/extra", "/notes/1/extra", "/notes/"])("returns 404 JSON for %s", async (path) => {
    const response = await call("GET", path);
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    expect(await response.json()).toEqual({ error: "Not found" });
  });
});

describe("unhandled failures", () => {
  it("answers a notes request on a database without tables with a generic JSON 500 and one safe log line", async () => {
    const logs = captureErrorLogs();
    const response = await callWithEnv({ DB: env.EMPTY_DB }, "POST", "/notes", { title: "secret title", content: "x" });
    expect(response.status).toBe(500);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    expect(await response.json()).toEqual({ error: "Internal server error" });

    expect(logs).toHaveLength(1);
    const line = JSON.parse(logs[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ level: "error", event: "unhandled_error", method: "POST", path: "/notes" });
    expect(line.errorMessage).toMatch(/no such table: notes/);
    expect(logs[0]).not.toMatch(/insert into|secret title/i);
  });

  it("answers an accounts request on a database without tables with a generic plain-text 500", async () => {
    const logs = captureErrorLogs();
    const email = `broken-${crypto.randomUUID()}@example.com`;
    const response = await callWithEnv({ DB: env.EMPTY_DB }, "POST", "/auth/register", { email, password: PASSWORD });
    expect(await textOf(response)).toEqual({ status: 500, type: TEXT, body: "Internal server error." });
    expect(logs.join("\n")).toMatch(/no such table: users/);
    // Neither the e-mail, nor the hash, nor the password reaches the log.
    expect(logs.join("\n")).not.toContain(email);
    expect(logs.join("\n")).not.toContain(PASSWORD);
    expect(logs.join("\n")).not.toMatch(/\$2[aby]\$/);
  });

  it("answers login with 500 and names the missing JWT_SECRET_KEY in the log", async () => {
    const email = await verifiedAccount();
    const logs = captureErrorLogs();
    const response = await callWithEnv({ JWT_SECRET_KEY: undefined }, "POST", "/auth/login", {
      email,
      password: PASSWORD,
    });
    expect(await textOf(response)).toEqual({ status: 500, type: TEXT, body: "Internal server error." });
    expect(logs).toHaveLength(1);
    expect(JSON.parse(logs[0]!)).toMatchObject({
      errorName: "ConfigError",
      errorMessage: expect.stringContaining("JWT_SECRET_KEY"),
    });
  });

  it("answers with 500 and names an unusable BCRYPT_COST in the log", async () => {
    const logs = captureErrorLogs();
    const response = await callWithEnv({ BCRYPT_COST: "ten" }, "GET", "/notes");
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ error: "Internal server error" });
    expect(JSON.parse(logs[0]!)).toMatchObject({
      errorName: "ConfigError",
      errorMessage: expect.stringContaining("BCRYPT_COST"),
    });
  });
});

describe("social sign-in settings", () => {
  it.each<[Record<`OAUTH_${string}`, string>, string]>([
    [{ OAUTH_PROVIDERS: "google,goo gle" }, "OAUTH_PROVIDERS"],
    [{ OAUTH_PROVIDERS: "google,google" }, "OAUTH_PROVIDERS"],
    [{ OAUTH_PROVIDERS: "okta" }, "OAUTH_OKTA_CLIENT_ID"],
    [{ OAUTH_PROVIDERS: "okta", OAUTH_OKTA_CLIENT_ID: "x" }, "OAUTH_OKTA_ISSUER"],
    [
      { OAUTH_PROVIDERS: "okta", OAUTH_OKTA_CLIENT_ID: "x", OAUTH_OKTA_ISSUER: "http://okta.example" },
      "OAUTH_OKTA_ISSUER",
    ],
    [{ OAUTH_PROVIDERS: "okta", OAUTH_OKTA_CLIENT_ID: "x", OAUTH_OKTA_ISSUER: "not a url" }, "OAUTH_OKTA_ISSUER"],
    [{ OAUTH_APPLE_KEY_ID: "" }, "OAUTH_APPLE_TEAM_ID"],
    [{ OAUTH_APPLE_PRIVATE_KEY: "not a key" }, "OAUTH_APPLE_PRIVATE_KEY"],
    [{ OAUTH_GITHUB_API_URL: "ftp://api.example" }, "OAUTH_GITHUB_API_URL"],
    [{ OAUTH_REDIRECT_URLS: "http://app.example/done" }, "OAUTH_REDIRECT_URLS"],
    [{ OAUTH_REDIRECT_URLS: "https://app.example/done#x" }, "OAUTH_REDIRECT_URLS"],
    [{ OAUTH_REDIRECT_URLS: "javascript:alert(1)" }, "OAUTH_REDIRECT_URLS"],
  ])(
    "refuses only social sign-in (503) and names an unusable setting in the log; the rest of the API works: %j",
    async (overrides, name) => {
      const logs = captureErrorLogs();
      expect((await callWithEnv(overrides, "GET", "/notes")).status).toBe(200);
      const refused = await callWithEnv(overrides, "GET", "/auth/oauth/google/authorize?redirect_uri=x");
      expect({ status: refused.status, body: await refused.text() }).toEqual({
        status: 503,
        body: AuthMessage.socialSignInUnavailable,
      });
      expect(JSON.parse(logs[0]!)).toMatchObject({
        event: "social_sign_in_unavailable",
        errorName: "ConfigError",
        errorMessage: expect.stringContaining(name),
      });
    },
  );

  it("takes no provider at all, and a PEM pasted on one line", async () => {
    expect((await callWithEnv({ OAUTH_PROVIDERS: "", OAUTH_REDIRECT_URLS: "" }, "GET", "/notes")).status).toBe(200);
    const oneLine = env.OAUTH.apple.privateKeyPem.trim().replace(/\n/g, "\\n");
    expect((await callWithEnv({ OAUTH_APPLE_PRIVATE_KEY: oneLine }, "GET", "/notes")).status).toBe(200);
  });
});
