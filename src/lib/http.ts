import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";

const METHOD_NOT_ALLOWED = "Method not allowed";

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

/**
 * The methods each path of an app serves, in the order they were registered, as an `Allow` value: the
 * 405s are derived from the routes themselves, so a new route can never be missing from them.
 */
export function allowedMethods(routes: readonly { method: string; path: string }[]): Map<string, string> {
  const methods = new Map<string, string[]>();
  for (const { method, path } of routes) {
    if (method === "ALL") continue;
    const list = methods.get(path) ?? [];
    if (!list.includes(method)) methods.set(path, [...list, method]);
  }
  return new Map([...methods].map(([path, list]) => [path, list.join(", ")]));
}

/** Handler for a known path reached with a method it does not serve (plain text in both areas, per the spec). */
export function methodNotAllowed(allow: string) {
  return (c: Context) => c.text(METHOD_NOT_ALLOWED, 405, { Allow: allow });
}

/** The 400 messages of a body that is not a JSON object, the same in both areas. */
export const BodyMessage = {
  notUtf8: "Request body must be valid UTF-8.",
  notJson: "Request body must be valid JSON.",
  notObject: "Request body must be a JSON object.",
  loneSurrogate: "Request body must not contain unpaired UTF-16 surrogates.",
} as const;

/** Parses the request body as a JSON object; anything else is a 400 with a message saying what is wrong. */
export async function readJsonObject(c: Context): Promise<Record<string, unknown>> {
  const text = decodeUtf8(await c.req.arrayBuffer());
  if (text.trim() === "") throw badRequest(BodyMessage.notObject);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest(BodyMessage.notJson);
  }
  // JSON may escape half of a UTF-16 surrogate pair ("\ud800"); such a string is not Unicode text and
  // D1 would store it mangled (and longer than what we checked), so the whole body is refused.
  if (escapesLoneSurrogate(text)) throw badRequest(BodyMessage.loneSurrogate);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw badRequest(BodyMessage.notObject);
  }
  return value as Record<string, unknown>;
}

// A lenient decoder would turn each bad byte into U+FFFD and store text the client never sent. A
// leading byte order mark is dropped, as Request.text() does.
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

function decodeUtf8(bytes: ArrayBuffer): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw badRequest(BodyMessage.notUtf8);
  }
}

const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;

/** The UTF-16 code unit of the `\uXXXX` escape at `at`, or -1 when there is none. */
function escapedUnit(json: string, at: number): number {
  return json.startsWith("\\u", at) ? Number.parseInt(json.slice(at + 2, at + 6), 16) : -1;
}

/**
 * True when valid JSON text escapes half of a surrogate pair without the other half. Decoded UTF-8
 * never holds a lone surrogate, so only an escape can make one. The text is scanned, not the parsed
 * value walked: a body nested thousands of levels deep costs no stack. In valid JSON every backslash
 * is inside a string and starts an escape (`\\` included), so stepping from escape to escape is exact.
 */
function escapesLoneSurrogate(json: string): boolean {
  for (let at = json.indexOf("\\"); at !== -1; at = json.indexOf("\\", at)) {
    const unit = escapedUnit(json, at);
    at += unit === -1 ? 2 : 6;
    if (isLowSurrogate(unit)) return true;
    if (isHighSurrogate(unit)) {
      if (!isLowSurrogate(escapedUnit(json, at))) return true;
      at += 6;
    }
  }
  return false;
}

/**
 * Sets a header on the answer the handler has already made (in a middleware, after `next()`), in place.
 * Hono's `c.header` would first copy the whole Response, on every such call; every answer of ours is a
 * Response the app made, whose headers can be changed.
 */
export function setAnswerHeader(c: Context, name: string, value: string): void {
  c.res.headers.set(name, value);
}

/** Sets `Retry-After` in whole seconds (at least 1). */
export function setRetryAfter(c: Context, waitMs: number): void {
  c.header("Retry-After", String(Math.max(1, Math.ceil(waitMs / 1000))));
}

/** The accounts area's 429: plain text with `Retry-After`, typed as such for the client. */
export function tooManyRequests<M extends string>(c: Context, waitMs: number, message: M) {
  setRetryAfter(c, waitMs);
  return c.text(message, 429);
}
