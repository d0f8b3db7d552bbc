import { sha256 } from "./crypto";
import { base64 } from "./encoding";

/**
 * The Content-Security-Policy of a page we serve that brings its one inline `<style>` and `<script>`:
 * those two, named by their SHA-256, requests to this origin, and nothing else. A script injected into the
 * page would not run, nor send what the page holds anywhere. Worked out once per page and isolate.
 */
export function inlinePagePolicy(html: string): Promise<string> {
  let policy = policies.get(html);
  if (!policy) {
    policy = (async () =>
      [
        "default-src 'none'",
        `script-src ${await hashSource(inlineText(html, "script"))}`,
        `style-src ${await hashSource(inlineText(html, "style"))}`,
        "connect-src 'self'",
        "img-src data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
      ].join("; "))();
    policies.set(html, policy);
  }
  return policy;
}

const policies = new Map<string, Promise<string>>();

/** The text of the page's one inline `<style>` or `<script>`, as a browser hashes it. */
function inlineText(html: string, tag: "style" | "script"): string {
  const start = html.indexOf(`<${tag}>`) + `<${tag}>`.length;
  return html.slice(start, html.indexOf(`</${tag}>`, start));
}

const hashSource = async (text: string) => `'sha256-${base64(await sha256(text))}'`;
