import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { call, callWithEnv, captureLogs, JSON_TYPE, randomEmail, tally, TEXT, textOf } from "../support/app";

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
