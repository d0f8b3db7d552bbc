import { afterEach, describe, expect, it, vi } from "vitest";
import { describeError, maskEmails } from "../../src/lib/log";
import { register, storedCode, verifiedAccount } from "../support/accounts";
import { call, callWithEnv, captureLogs, PASSWORD, randomEmail } from "../support/app";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("maskEmails", () => {
  it("masks every address-shaped part of a text, whatever surrounds it", () => {
    expect(maskEmails("550 <jane.doe@example.com>: Recipient address rejected")).toBe(
      "550 <j***@example.com>: Recipient address rejected",
    );
    expect(maskEmails('to "ann@a.example", bob+x@b.example; (carl@c.example) dora@d.example.')).toBe(
      'to "a***@a.example", b***@b.example; (c***@c.example) d***@d.example.',
    );
    expect(maskEmails("ünïcode@bücher.example and 😀x@example.com")).toBe("ü***@bücher.example and 😀***@example.com");
    expect(maskEmails("no address here, user@ or @domain")).toBe("no address here, user@ or @domain");
  });

  it("is applied to logged error messages before they are cut to 300 characters", () => {
    const { errorMessage } = describeError(new Error(`${"x".repeat(290)} jane.doe@example.com`));
    expect(errorMessage).toBe(`${"x".repeat(290)} j***@exam`);
  });
});

describe("log lines", () => {
  it("masks e-mail addresses and carries the request id, method and path", async () => {
    const logs = captureLogs();
    const email = randomEmail();
    const response = await register(email);
    const requestId = response.headers.get("x-request-id");

    const registered = logs.find((line) => line.event === "user_registered");
    expect(registered).toMatchObject({ level: "info", requestId, method: "POST", path: "/auth/register" });
    expect(registered!.email).toBe(`u***@example.com`);
    expect(typeof registered!.time).toBe("string");

    const all = JSON.stringify(logs);
    expect(all).not.toContain(email);
    expect(all).not.toContain(PASSWORD);
    expect(all).not.toContain((await storedCode(email))!.code);
  });

  it("writes a request line (status, duration) for answers of 400 or more, and with LOG_REQUESTS=all for every answer", async () => {
    const logs = captureLogs();
    const requestLines = (response: Response) =>
      logs.filter((line) => line.event === "request" && line.requestId === response.headers.get("x-request-id"));

    const listed = await call("GET", "/notes");
    expect(listed.status).toBe(200);
    expect(requestLines(listed)).toEqual([]);

    const refused = await call("GET", "/notes/abc");
    expect(refused.status).toBe(400);
    expect(requestLines(refused)).toEqual([
      expect.objectContaining({
        level: "info",
        status: 400,
        method: "GET",
        path: "/notes/abc",
        durationMs: expect.any(Number) as number,
      }),
    ]);

    const all = await callWithEnv({ LOG_REQUESTS: "all" }, "GET", "/notes");
    expect(all.status).toBe(200);
    expect(requestLines(all)).toEqual([expect.objectContaining({ status: 200, method: "GET", path: "/notes" })]);

    const misconfigured = await callWithEnv({ LOG_REQUESTS: "some" }, "GET", "/notes");
    expect(misconfigured.status).toBe(500);
    expect(JSON.stringify(logs)).toContain("LOG_REQUESTS must be one of: errors, all");
  });

  it("warns once when JWT_SECRET_KEY is shorter than 32 bytes", async () => {
    const email = await verifiedAccount();
    const logs = captureLogs();
    const response = await callWithEnv({ JWT_SECRET_KEY: "too-short" }, "POST", "/auth/login", {
      email,
      password: PASSWORD,
    });
    expect(response.status).toBe(200);
    expect(logs.filter((line) => line.event === "jwt_secret_short")).toHaveLength(1);
    expect(JSON.stringify(logs)).not.toContain("too-short");
  });
});
