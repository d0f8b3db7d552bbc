import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";

export const METHOD_NOT_ALLOWED = "Method not allowed";

/** A failure the client caused: the message is shown to the client as it is. */
export function badRequest(message: string): HTTPException {
  return new HTTPException(400, { message });
}

/** The accounts area answers in plain text; everything else (the notes area) in JSON `{ "error": ... }`. */
export function isAccountsPath(path: string): boolean {
  return path === "/auth" || path.startsWith("/auth/");
}

export function errorResponse(c: Context, status: ContentfulStatusCode, message: string): Response {
  return isAccountsPath(c.req.path) ? c.text(message, status) : c.json({ error: message }, status);
}

/** Handler for a known path reached with a method it does not serve (plain text in both areas, per the spec). */
export function methodNotAllowed(allow: string) {
  return (c: Context) => c.text(METHOD_NOT_ALLOWED, 405, { Allow: allow });
}

/** Parses the request body as a JSON object; anything else is a 400 with a message saying what is wrong. */
export async function readJsonObject(c: Context): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  if (text.trim() === "") throw badRequest("Request body must be a JSON object.");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest("Request body must be valid JSON.");
  }
  // JSON may escape half of a UTF-16 surrogate pair ("\ud800"); such a string is not Unicode text and
  // D1 would store it mangled (and longer than what we checked), so the whole body is refused. Decoded
  // UTF-8 never holds one, so only a body with such an escape needs the walk.
  if (SURROGATE_ESCAPE.test(text) && !wellFormed(value)) {
    throw badRequest("Request body must not contain unpaired UTF-16 surrogates.");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw badRequest("Request body must be a JSON object.");
  }
  return value as Record<string, unknown>;
}

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** True when every string in a parsed JSON value (keys included) is well-formed Unicode. */
function wellFormed(value: unknown): boolean {
  if (typeof value === "string") return value.isWellFormed();
  if (typeof value !== "object" || value === null) return true;
  return Object.entries(value).every(([key, field]) => key.isWellFormed() && wellFormed(field));
}

/** A 429 in the area's format with `Retry-After` in whole seconds (at least 1). */
export function tooManyRequests(c: Context, waitMs: number, message: string): Response {
  c.header("Retry-After", String(Math.max(1, Math.ceil(waitMs / 1000))));
  return errorResponse(c, 429, message);
}
