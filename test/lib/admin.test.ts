/** The admin API's door (src/lib/admin.ts): ADMIN_TOKEN, and nothing else, opens /admin/*. */
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AuthMessage } from "../../src/auth/messages";
import { AdminMessage } from "../../src/lib/admin";
import { bearer, logIn, me, verifiedAccount } from "../support/accounts";
import { ADMIN, admin } from "../support/admin";
import { call, callWithEnv, captureLogs, JSON_TYPE, tally, TEXT, textOf } from "../support/app";

afterEach(() => {
  vi.restoreAllMocks();
});

const ROUTES: Array<[string, string]> = [
  ["GET", "/admin/users"],
  ["GET", "/admin/users/1"],
  ["POST", "/admin/users/1/ban"],
  ["POST", "/admin/users/1/unban"],
  ["POST", "/admin/users/1/sign-out"],
  ["DELETE", "/admin/users/1"],
  ["GET", "/admin/audit"],
  ["GET", "/admin/webhooks/failed"],
  ["POST", "/admin/webhooks/failed/evt_1/retry"],
  ["GET", "/admin/nothing-here"],
  ["PUT", "/admin/users"],
];

async function answer(response: Response) {
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    cache: response.headers.get("cache-control"),
    body: await response.json(),
  };
}

describe("ADMIN_TOKEN unset", () => {
  it.each(ROUTES)("answers %s %s with the 404 of an unknown path, even with a token", async (method, path) => {
    const response = await callWithEnv(
      { ADMIN_TOKEN: undefined },
      method,
      path,
      method === "GET" ? undefined : {},
      ADMIN,
    );
    expect(await answer(response)).toEqual({
      status: 404,
      type: JSON_TYPE,
      cache: "no-store",
      body: { error: "Not found" },
    });
  });

  it("answers exactly as a path that does not exist", async () => {
    const unknown = await call("GET", "/nothing-here");
    const unset = await callWithEnv({ ADMIN_TOKEN: "" }, "GET", "/admin/users");
    expect(unset.status).toBe(unknown.status);
    expect(await unset.json()).toEqual(await unknown.json());
  });
});

describe("ADMIN_TOKEN set", () => {
  it.each(ROUTES.slice(0, 9))("answers %s %s without a token with 401 JSON, not stored", async (method, path) => {
    const response = await call(method, path, method === "GET" ? undefined : {});
    expect(await answer(response)).toEqual({
      status: 401,
      type: JSON_TYPE,
      cache: "no-store",
      body: { error: AdminMessage.unauthorized },
    });
    expect(response.headers.get("www-authenticate")).toBe('Bearer realm="admin"');
  });

  it.each([
    ["a wrong token", `Bearer ${env.ADMIN_TOKEN}x`],
    ["the token's first half", `Bearer ${env.ADMIN_TOKEN.slice(0, 20)}`],
    ["another scheme", `Basic ${env.ADMIN_TOKEN}`],
    ["the token without a scheme", env.ADMIN_TOKEN],
    ["an empty bearer", "Bearer "],
  ])("refuses %s with 401", async (_what, authorization) => {
    const logs = captureLogs();
    const response = await call("GET", "/admin/users", undefined, { Authorization: authorization });
    expect(await answer(response)).toEqual({
      status: 401,
      type: JSON_TYPE,
      cache: "no-store",
      body: { error: AdminMessage.unauthorized },
    });
    // The log says a token was refused, never what was presented.
    expect(logs.find((line) => line.event === "admin_token_refused")).toBeDefined();
    expect(JSON.stringify(logs)).not.toContain(env.ADMIN_TOKEN.slice(0, 20));
  });

  it("takes the token with any case of Bearer, and answers JSON, not stored", async () => {
    const response = await call("GET", "/admin/users?limit=1", undefined, {
      Authorization: `bearer ${env.ADMIN_TOKEN}`,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    expect(response.headers.get("cache-control")).toBe("no-store");
  });

  it("never takes a user's access token, and a user's route never takes the admin token", async () => {
    const tokens = await logIn(await verifiedAccount());
    expect(await answer(await call("GET", "/admin/users", undefined, bearer(tokens.token)))).toEqual({
      status: 401,
      type: JSON_TYPE,
      cache: "no-store",
      body: { error: AdminMessage.unauthorized },
    });
    expect(await textOf(await me(env.ADMIN_TOKEN))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidAccessToken,
    });
    expect((await call("GET", "/auth/sessions", undefined, ADMIN)).status).toBe(401);
  });

  it("answers an unknown /admin path with a JSON 404 and a wrong method with a JSON 405 and Allow", async () => {
    expect(await answer(await admin("GET", "/admin/nothing-here"))).toEqual({
      status: 404,
      type: JSON_TYPE,
      cache: "no-store",
      body: { error: "Not found" },
    });
    const wrong = await admin("PUT", "/admin/users/1");
    expect(await answer(wrong)).toEqual({
      status: 405,
      type: JSON_TYPE,
      cache: "no-store",
      body: { error: AdminMessage.methodNotAllowed },
    });
    expect(wrong.headers.get("allow")).toBe("GET, DELETE");
  });

  it("refuses a body over 16 KiB with a JSON 413", async () => {
    const response = await admin("POST", "/admin/users/1/ban", { until: null, reason: "x".repeat(17 * 1024) });
    expect(await answer(response)).toEqual({
      status: 413,
      type: JSON_TYPE,
      cache: "no-store",
      body: { error: AdminMessage.bodyTooLarge },
    });
  });

  it("answers 503 and logs the problem when ADMIN_TOKEN is shorter than 32 characters", async () => {
    const logs = captureLogs();
    const short = "short-admin-token-0123456789";
    const response = await callWithEnv({ ADMIN_TOKEN: short }, "GET", "/admin/users", undefined, {
      Authorization: `Bearer ${short}`,
    });
    expect(await answer(response)).toEqual({
      status: 503,
      type: JSON_TYPE,
      cache: "no-store",
      body: { error: AdminMessage.unavailable },
    });
    expect(logs.find((line) => line.event === "admin_unavailable")?.problem).toBe(
      "ADMIN_TOKEN must be at least 32 characters",
    );
    // The rest of the service does not depend on it.
    expect((await callWithEnv({ ADMIN_TOKEN: short }, "GET", "/notes")).status).toBe(200);
  });
});

describe("wrong admin tokens and the per-client limit", () => {
  // The local limiter counts in wall-clock minutes (test/lib/request-limits.test.ts): start with 20 s left.
  beforeEach(async () => {
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 20_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
  }, 30_000);
  const limited = { RATE_LIMITS: "on" };

  it("counts wrong tokens against the client's limit: 30 answers 401, then 429 with Retry-After", async () => {
    const client = { "CF-Connecting-IP": `198.51.100.${Math.floor(Math.random() * 250)}-${crypto.randomUUID()}` };
    const wrong = { ...client, Authorization: "Bearer not-the-admin-token-at-all-0123456789" };
    const burst = await Promise.all(
      Array.from({ length: 40 }, () => callWithEnv(limited, "GET", "/admin/users", undefined, wrong)),
    );
    expect(tally(burst)).toEqual({ 401: 30, 429: 10 });
    const over = await callWithEnv(limited, "GET", "/admin/users", undefined, wrong);
    expect(await answer(over)).toEqual({
      status: 429,
      type: JSON_TYPE,
      cache: "no-store",
      body: { error: AdminMessage.throttled },
    });
    expect(over.headers.get("retry-after")).toBe("60");
    // The same client's /auth POSTs share that limit.
    expect((await callWithEnv(limited, "POST", "/auth/login", {}, client)).status).toBe(429);
  });

  it("does not count requests with the right token", async () => {
    const client = { "CF-Connecting-IP": `203.0.113.${Math.floor(Math.random() * 250)}-${crypto.randomUUID()}` };
    const burst = await Promise.all(
      Array.from({ length: 40 }, () =>
        callWithEnv(limited, "GET", "/admin/users?limit=1", undefined, { ...client, ...ADMIN }),
      ),
    );
    expect(tally(burst)).toEqual({ 200: 40 });
    expect((await callWithEnv(limited, "POST", "/auth/login", {}, client)).status).toBe(400);
  });
});
