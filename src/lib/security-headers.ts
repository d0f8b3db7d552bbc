import type { Context, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../types";
import { setAnswerHeader } from "./http";

/** The headers that say how an answer may be kept, framed, sniffed and read: security headers and no-store. */

/**
 * `Cache-Control: no-store` on the answers of requests `applies` to: tokens and personal data must not sit
 * in a browser's or a proxy's cache (RFC 6749 section 5.1, OWASP ASVS V8.2).
 */
export function noStore(applies: (c: Context<AppEnv>) => boolean = () => true): MiddlewareHandler<AppEnv> {
  return createMiddleware<AppEnv>(async (c, next) => {
    await next();
    if (applies(c)) setAnswerHeader(c, "Cache-Control", "no-store");
  });
}

/**
 * The security headers of every answer: those OWASP's REST Security Cheat Sheet lists for an API (HTTPS
 * only; no MIME sniffing; never framed, in both spellings, the old and the CSP one below), and one more:
 * not readable across origins by a `no-cors` embed (only through CORS, when CORS_ORIGINS allows it).
 * Cache-Control is each area's own (noStore). A page a browser renders adds DOCUMENT_SECURITY_HEADERS.
 */
const ANSWER_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Strict-Transport-Security": "max-age=15552000; includeSubDomains",
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
};

/**
 * Same-origin unless an answer says otherwise: only an attachment's signed link does, so that another page's
 * `<img>` can show it (notes/attachments/link-routes.ts).
 */
const RESOURCE_POLICY = "Cross-Origin-Resource-Policy";

export const CONTENT_SECURITY_POLICY = "Content-Security-Policy";
/** The policy of an answer that brings none of its own: never framed. A document sets its own, stricter one. */
const NEVER_FRAMED = "frame-ancestors 'none'";

/**
 * The headers only a document (an HTML page) reads, for the one page we serve (the reference at /docs):
 * how it opens windows and sends referrers, and the switches of older browsers. A JSON or text answer
 * that carries them only grows by some 200 bytes (docs/security.md). The page's Content-Security-Policy is
 * its own (docsContentSecurityPolicy, beside the page).
 */
export const DOCUMENT_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Cross-Origin-Opener-Policy": "same-origin",
  "Origin-Agent-Cluster": "?1",
  "Referrer-Policy": "no-referrer",
  "X-DNS-Prefetch-Control": "off",
  "X-Download-Options": "noopen",
  "X-Permitted-Cross-Domain-Policies": "none",
  "X-XSS-Protection": "0",
};

/** Listed once per isolate rather than once per answer. */
const answerSecurityHeaders = Object.entries(ANSWER_SECURITY_HEADERS);

/**
 * Sets ANSWER_SECURITY_HEADERS on every answer, whichever part of the app made it (errors included), and
 * a Content-Security-Policy and a Cross-Origin-Resource-Policy on those that bring none (the /docs page and an
 * attachment's bytes bring their own policy, a signed link's bytes their own resource policy).
 */
export const securityHeaders = createMiddleware(async (c, next) => {
  await next();
  const { headers } = c.res;
  for (const [name, value] of answerSecurityHeaders) headers.set(name, value);
  if (!headers.has(CONTENT_SECURITY_POLICY)) headers.set(CONTENT_SECURITY_POLICY, NEVER_FRAMED);
  if (!headers.has(RESOURCE_POLICY)) headers.set(RESOURCE_POLICY, "same-origin");
});
