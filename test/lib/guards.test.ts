import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { call, callWithEnv, JSON_TYPE, randomEmail, TEXT, textOf } from "../helpers";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("per-client rate limit", () => {
  const limited = { RATE_LIMITS: "on" };
  const client = () => ({ "CF-Connecting-IP": `198.51.100.${Math.floor(Math.random() * 250)}-${crypto.randomUUID()}` });

  it("answers 429 plain text with Retry-After after 30 POSTs to /auth in a minute, per client", async () => {
    const ip = client();
    for (let i = 0; i < 30; i++) {
      expect((await callWithEnv(limited, "POST", "/auth/login", {}, ip)).status).toBe(400);
    }
    const over = await callWithEnv(limited, "POST", "/auth/login", {}, ip);
    expect(await textOf(over)).toEqual({ status: 429, type: TEXT, body: "Too many requests. Please slow down." });
    expect(over.headers.get("retry-after")).toBe("60");
    // Another client is not affected.
    expect((await callWithEnv(limited, "POST", "/auth/login", {}, client())).status).toBe(400);
  });

  it("answers 429 JSON after 300 note writes in a minute, and leaves reads alone", async () => {
    const ip = client();
    for (let i = 0; i < 300; i++) {
      expect((await callWithEnv(limited, "POST", "/notes", "{", ip)).status).toBe(400);
    }
    const over = await callWithEnv(limited, "POST", "/notes", { title: "t", content: "c" }, ip);
    expect(over.status).toBe(429);
    expect(over.headers.get("content-type")).toBe(JSON_TYPE);
    expect(over.headers.get("retry-after")).toBe("60");
    expect(await over.json()).toEqual({ error: "Too many requests" });
    expect((await callWithEnv(limited, "GET", "/notes/1", undefined, ip)).status).not.toBe(429);
  });

  it("is off with RATE_LIMITS=off", async () => {
    const ip = client();
    for (let i = 0; i < 40; i++) {
      expect((await callWithEnv({ RATE_LIMITS: "off" }, "POST", "/auth/login", {}, ip)).status).toBe(400);
    }
  });
});

describe("request size limits", () => {
  it("refuses an accounts body over 16 KiB with 413 plain text", async () => {
    const body = JSON.stringify({ email: randomEmail(), password: "x".repeat(17 * 1024) });
    expect(await textOf(await call("POST", "/auth/register", body))).toEqual({
      status: 413,
      type: TEXT,
      body: "Request body is too large (limit 16 KiB).",
    });
  });

  it("refuses a note body over 1 MiB with 413 JSON and accepts one just under", async () => {
    const tooBig = await call("POST", "/notes", { title: "big", content: "x".repeat(1024 * 1024) });
    expect(tooBig.status).toBe(413);
    expect(tooBig.headers.get("content-type")).toBe(JSON_TYPE);
    expect(await tooBig.json()).toEqual({ error: "Request body is too large (limit 1 MiB)" });

    const content = "y".repeat(1000 * 1024);
    const fits = await call("POST", "/notes", { title: "large", content });
    expect(fits.status).toBe(201);
    const { id } = (await fits.json()) as { id: number };
    expect(((await call("PATCH", `/notes/${id}`, { content: `${content}z`.repeat(2) })).status)).toBe(413);
    const stored = await env.DB.prepare("SELECT length(content) AS n FROM notes WHERE id = ?").bind(id).first<{ n: number }>();
    expect(stored!.n).toBe(content.length);
  });
});

describe("headers on every response", () => {
  it.each([
    ["GET", "/notes"],
    ["POST", "/auth/login"],
    ["GET", "/nope"],
  ])("%s %s carries secure headers and a request id", async (method, path) => {
    const response = await call(method, path, method === "POST" ? {} : undefined);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("x-frame-options")).toBe("SAMEORIGIN");
    expect(response.headers.get("strict-transport-security")).toMatch(/max-age=\d+/);
    expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("keeps a request id the client sent", async () => {
    const response = await call("GET", "/notes", undefined, { "X-Request-Id": "client-chosen-id-1" });
    expect(response.headers.get("x-request-id")).toBe("client-chosen-id-1");
  });
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
    expect(response.headers.get("access-control-allow-headers")).toBe("Authorization,Content-Type,X-D1-Bookmark,Idempotency-Key");
    expect(response.headers.get("access-control-allow-methods")).toBe("GET,POST,PATCH,DELETE");
  });

  it("allows no other origin, and none at all by default", async () => {
    const refused = await callWithEnv(origins, "OPTIONS", "/notes", undefined, preflight("https://evil.example.com"));
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
    const byDefault = await call("OPTIONS", "/notes", undefined, preflight("https://app.example.com"));
    expect(byDefault.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("marks actual responses for an allowed origin, and leaves plain OPTIONS to the spec's 405", async () => {
    const response = await callWithEnv(origins, "GET", "/notes", undefined, { Origin: "https://app.example.com" });
    expect(response.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect((await call("OPTIONS", "/notes")).status).toBe(405);
  });
});
