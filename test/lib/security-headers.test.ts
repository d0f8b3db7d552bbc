import { afterEach, describe, expect, it, vi } from "vitest";
import { call, callWithEnv, randomEmail } from "../support/app";

afterEach(() => {
  vi.restoreAllMocks();
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
