import { describe, expect, it } from "vitest";
import { Contract } from "../contract";
import { call, TEXT, textOf } from "../support/app";

describe("wrong methods and unknown paths in the accounts area", () => {
  it.each([
    ["GET", "/auth/register", "POST"],
    ["GET", "/auth/verify-email", "POST"],
    ["GET", "/auth/login", "POST"],
    ["GET", "/auth/refresh", "POST"],
    ["GET", "/auth/logout", "POST"],
    ["PATCH", "/auth/sessions", "GET, DELETE"],
    ["GET", "/auth/sessions/abc", "DELETE"],
    ["POST", "/auth/me", "GET"],
    ["GET", "/auth/forgot-password", "POST"],
    ["PUT", "/auth/reset-password", "POST"],
    ["GET", "/auth/change-password", "POST"],
    ["DELETE", "/auth/change-email", "POST"],
    ["PATCH", "/auth/confirm-email-change", "POST"],
    ["GET", "/auth/account", "DELETE"],
    ["POST", "/auth/account", "DELETE"],
  ])("returns 405 with Allow for %s %s", async (method, path, allow) => {
    const response = await call(method, path);
    expect(await textOf(response)).toEqual({ status: 405, type: TEXT, body: Contract.methodNotAllowed });
    expect(response.headers.get("allow")).toBe(allow);
  });

  it("returns 404 plain text for an unknown /auth path", async () => {
    expect(await textOf(await call("POST", "/auth/no-such-thing", {}))).toEqual({
      status: 404,
      type: TEXT,
      body: "Not found.",
    });
  });
});
