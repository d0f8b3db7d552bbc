import { afterEach, describe, expect, it, vi } from "vitest";
import { call, callWithEnv } from "../support/app";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("CORS", () => {
  const origins = { CORS_ORIGINS: "https://app.example.com, https://admin.example.com" };
  const preflight = (origin: string) => ({
    Origin: origin,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization, content-type",
  });

  it("answers a preflight from an allowed origin", async () => {
    const response = await callWithEnv(origins, "OPTIONS", "/notes", undefined, preflight("https://admin.example.com"));
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("https://admin.example.com");
    expect(response.headers.get("access-control-allow-headers")).toBe(
      "Authorization,Content-Type,X-D1-Bookmark,Idempotency-Key,If-Match,If-None-Match,Range,If-Range",
    );
    expect(response.headers.get("access-control-allow-methods")).toBe("GET,POST,PATCH,DELETE");
  });

  it("allows no other origin, and none at all by default", async () => {
    const refused = await callWithEnv(origins, "OPTIONS", "/notes", undefined, preflight("https://evil.example.com"));
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
    const byDefault = await call("OPTIONS", "/notes", undefined, preflight("https://app.example.com"));
    expect(byDefault.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("lets a browser read Link (the next page) and WWW-Authenticate (the scheme a 401 wants)", async () => {
    const response = await callWithEnv({ ...origins, NOTES_AUTH: "required" }, "GET", "/notes", undefined, {
      Origin: "https://app.example.com",
    });
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe("Bearer");
    expect(response.headers.get("access-control-expose-headers")?.split(",")).toEqual(
      expect.arrayContaining(["Link", "WWW-Authenticate", "ETag", "Idempotent-Replayed"]),
    );
  });

  it("lets a page of an allowed origin ask for part of an attachment and read where a new one is and which part came", async () => {
    const response = await callWithEnv(origins, "OPTIONS", "/notes/1/attachments/a", undefined, {
      Origin: "https://app.example.com",
      "Access-Control-Request-Method": "GET",
      "Access-Control-Request-Headers": "authorization, range",
    });
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-headers")?.split(",")).toEqual(
      expect.arrayContaining(["Range", "If-Range"]),
    );
    const answer = await callWithEnv(origins, "GET", "/notes", undefined, { Origin: "https://app.example.com" });
    expect(answer.headers.get("access-control-expose-headers")?.split(",")).toEqual(
      expect.arrayContaining(["Location", "Content-Range", "Content-Disposition"]),
    );
  });

  it("marks actual responses for an allowed origin, and leaves plain OPTIONS to the spec's 405", async () => {
    const response = await callWithEnv(origins, "GET", "/notes", undefined, { Origin: "https://app.example.com" });
    expect(response.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect((await call("OPTIONS", "/notes")).status).toBe(405);
  });
});
