import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { call, callWithEnv, captureLogs, JSON_TYPE, randomEmail, tally, TEXT, textOf } from "../helpers";

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * The local rate limiter counts in wall-clock minutes: a test that needs hundreds of requests inside one window
 * starts with at least 20 s of the current minute left, so no window boundary falls inside it.
 */
async function freshWindow(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 20_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

describe("per-client rate limit", () => {
  beforeEach(freshWindow, 30_000);
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
    expect((await call("PATCH", `/notes/${id}`, { content: `${content}z`.repeat(2) })).status).toBe(413);
    const stored = await env.DB.prepare("SELECT length(content) AS n FROM notes WHERE id = ?")
      .bind(id)
      .first<{ n: number }>();
    expect(stored!.n).toBe(content.length);
  });
});

/**
 * Every security header Hono's `secureHeaders()` knows of, and the CSP, as an answer carries them (absent ones left
 * out).
 */
function securityHeadersOf(response: Response): Record<string, string> {
  const names = [
    "content-security-policy",
    "cross-origin-embedder-policy",
    "cross-origin-opener-policy",
    "cross-origin-resource-policy",
    "origin-agent-cluster",
    "permissions-policy",
    "referrer-policy",
    "strict-transport-security",
    "x-content-type-options",
    "x-dns-prefetch-control",
    "x-download-options",
    "x-frame-options",
    "x-permitted-cross-domain-policies",
    "x-xss-protection",
  ];
  return Object.fromEntries(
    names.flatMap((name) => (response.headers.has(name) ? [[name, response.headers.get(name)!]] : [])),
  );
}

const API_SECURITY_HEADERS = {
  "content-security-policy": "frame-ancestors 'none'",
  "cross-origin-resource-policy": "same-origin",
  "strict-transport-security": "max-age=15552000; includeSubDomains",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
};

const DOCUMENT_SECURITY_HEADERS = {
  "cross-origin-opener-policy": "same-origin",
  "origin-agent-cluster": "?1",
  "referrer-policy": "no-referrer",
  "x-dns-prefetch-control": "off",
  "x-download-options": "noopen",
  "x-permitted-cross-domain-policies": "none",
  "x-xss-protection": "0",
};

describe("headers on every response", () => {
  it.each([
    ["GET", "/notes"],
    ["POST", "/auth/login"],
    ["GET", "/nope"],
    ["GET", "/openapi.json"],
  ])("%s %s carries an API's security headers, no document's, and a request id", async (method, path) => {
    const response = await call(method, path, method === "POST" ? {} : undefined);
    expect(securityHeadersOf(response)).toEqual(API_SECURITY_HEADERS);
    expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("gives the /docs page a document's security headers too, and a policy that runs only its own style and script", async () => {
    const response = await call("GET", "/docs");
    expect(response.headers.get("content-type")).toBe("text/html; charset=UTF-8");
    const page = await response.text();
    // The page has one inline style and one inline script, no other source of either, and no inline handler.
    expect(page.match(/<(script|style|link)\b[^>]*>/g)).toEqual([
      '<link rel="icon" href="data:,">',
      "<style>",
      "<script>",
    ]);
    expect(page).not.toMatch(/\son[a-z]+=|\sstyle=/);
    const hashOf = async (tag: string) => {
      const text = new RegExp(`<${tag}>([\\s\\S]*)</${tag}>`).exec(page)![1]!;
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
      return `'sha256-${btoa(String.fromCharCode(...digest))}'`;
    };
    expect(securityHeadersOf(response)).toEqual({
      ...API_SECURITY_HEADERS,
      ...DOCUMENT_SECURITY_HEADERS,
      "content-security-policy":
        `default-src 'none'; script-src ${await hashOf("script")}; style-src ${await hashOf("style")}; ` +
        "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    });
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
    expect(response.headers.get("access-control-allow-headers")).toBe(
      "Authorization,Content-Type,X-D1-Bookmark,Idempotency-Key,If-Match,If-None-Match",
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

  it("marks actual responses for an allowed origin, and leaves plain OPTIONS to the spec's 405", async () => {
    const response = await callWithEnv(origins, "GET", "/notes", undefined, { Origin: "https://app.example.com" });
    expect(response.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect((await call("OPTIONS", "/notes")).status).toBe(405);
  });
});

describe("per-client rate limit keys", () => {
  beforeEach(freshWindow, 30_000);
  const limited = { RATE_LIMITS: "on" };
  /** A fresh /64 of the documentation range, and an address inside it. */
  const prefix = () =>
    `2001:db8:${Math.floor(Math.random() * 0xffff).toString(16)}:${Math.floor(Math.random() * 0xffff).toString(16)}`;

  it("counts every address of one IPv6 /64 as one client: of 40 concurrent POSTs from 40 addresses, 30 pass", async () => {
    const net = prefix();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        callWithEnv(limited, "POST", "/auth/login", {}, { "CF-Connecting-IP": `${net}::${(i + 1).toString(16)}` }),
      ),
    );
    expect(tally(answers)).toEqual({ 400: 30, 429: 10 });
    // The same /64 spelled another way is the same client; the next /64 is another one.
    expect(
      (await callWithEnv(limited, "POST", "/auth/login", {}, { "CF-Connecting-IP": `${net.toUpperCase()}:0:0:0:ffff` }))
        .status,
    ).toBe(429);
    expect(
      (await callWithEnv(limited, "POST", "/auth/login", {}, { "CF-Connecting-IP": `${prefix()}::1` })).status,
    ).toBe(400);
  });

  it("counts the /64s of one IPv6 /48 together too: 10 of them use up its 300, an 11th is refused, another /48 is not", async () => {
    const logs = captureLogs();
    const site = () => `2001:db8:${Math.floor(Math.random() * 0xffff).toString(16)}`;
    const net = site();
    // Each /64 stays within its own 30; the tenth reaches the /48's 300.
    for (let subnet = 1; subnet <= 10; subnet++) {
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          callWithEnv(
            limited,
            "POST",
            "/auth/login",
            {},
            { "CF-Connecting-IP": `${net}:${subnet.toString(16)}::${(i + 1).toString(16)}` },
          ),
        ),
      );
      expect(tally(answers)).toEqual({ 400: 30 });
    }
    const eleventh = await callWithEnv(limited, "POST", "/auth/login", {}, { "CF-Connecting-IP": `${net}:b::1` });
    expect(await textOf(eleventh)).toEqual({ status: 429, type: TEXT, body: "Too many requests. Please slow down." });
    expect(eleventh.headers.get("retry-after")).toBe("60");
    expect(logs.filter((line) => line.event === "client_rate_limited")).toEqual([
      expect.objectContaining({ level: "warn", by: "network" }),
    ]);
    expect(
      (await callWithEnv(limited, "POST", "/auth/login", {}, { "CF-Connecting-IP": `${site()}:1::1` })).status,
    ).toBe(400);
  });

  it("does not count against the /48 what a /64's own limit refused: one /64 over its limit leaves its neighbours their share", async () => {
    const net = `2001:db8:${Math.floor(Math.random() * 0xffff).toString(16)}`;
    const noisy = await Promise.all(
      Array.from({ length: 330 }, () =>
        callWithEnv(limited, "POST", "/auth/login", {}, { "CF-Connecting-IP": `${net}:1::1` }),
      ),
    );
    expect(tally(noisy)).toEqual({ 400: 30, 429: 300 });
    const neighbour = await Promise.all(
      Array.from({ length: 30 }, () =>
        callWithEnv(limited, "POST", "/auth/login", {}, { "CF-Connecting-IP": `${net}:2::1` }),
      ),
    );
    expect(tally(neighbour)).toEqual({ 400: 30 });
  });

  it("keys IPv4 clients by their whole address", async () => {
    const a = `198.51.100.${Math.floor(Math.random() * 250)}`;
    const b = `203.0.113.${Math.floor(Math.random() * 250)}`;
    const fromA = await Promise.all(
      Array.from({ length: 31 }, () => callWithEnv(limited, "POST", "/auth/login", {}, { "CF-Connecting-IP": a })),
    );
    expect(tally(fromA)).toEqual({ 400: 30, 429: 1 });
    expect((await callWithEnv(limited, "POST", "/auth/login", {}, { "CF-Connecting-IP": b })).status).toBe(400);
  });
});

describe("Cache-Control", () => {
  it("is no-store on every accounts answer: tokens, personal data, errors", async () => {
    for (const response of [
      await call("POST", "/auth/login", { email: randomEmail(), password: "wrong password" }),
      await call("GET", "/auth/me"),
      await call("GET", "/auth/sessions"),
      await call("POST", "/auth/refresh", { refresh_token: "x" }),
    ]) {
      expect(response.headers.get("cache-control")).toBe("no-store");
    }
  });

  it("is no-store on notes answers when notes are private, and left to caches when they are public", async () => {
    expect((await callWithEnv({ NOTES_AUTH: "required" }, "GET", "/notes")).headers.get("cache-control")).toBe(
      "no-store",
    );
    expect((await call("GET", "/notes?limit=1")).headers.get("cache-control")).toBeNull();
  });
});
