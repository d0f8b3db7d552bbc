import * as v from "valibot";
import { base64url, fromBase64url } from "./encoding";

/**
 * Pages of a list in JSON (`{"<items>": [...], "next_cursor": ...}`), the admin API's and the audit log's: a `limit`
 * and an opaque `cursor`, the position after the last item of the previous page.
 */

export const InvalidCursor = "Invalid cursor.";

/** A position as a cursor: base64url of its parts in JSON. Opaque to clients; only the service reads it. */
export function writeCursor(parts: readonly (string | number)[]): string {
  return base64url(new TextEncoder().encode(JSON.stringify(parts)));
}

/** The parts of a cursor written by writeCursor with `shape` (one JS type per part), or undefined for anything else. */
export function readCursor<const T extends readonly ("string" | "number")[]>(
  raw: string,
  shape: T,
): { [K in keyof T]: T[K] extends "number" ? number : string } | undefined {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(raw)) return undefined;
  let parts: unknown;
  try {
    parts = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(fromBase64url(raw)));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parts) || parts.length !== shape.length) return undefined;
  const ok = parts.every((part, i) =>
    shape[i] === "number" ? Number.isSafeInteger(part) : typeof part === "string" && part.length <= 100,
  );
  // Only the spelling writeCursor gives: one cursor per position.
  if (!ok || writeCursor(parts as (string | number)[]) !== raw) return undefined;
  return parts as { [K in keyof T]: T[K] extends "number" ? number : string };
}

/** The 400 of a `limit` out of 1..max. */
export const limitMessage = (max: number) => `limit must be an integer from 1 to ${max}.`;

/** The `limit` of a page query: a decimal integer from 1 to `max`, as a number. */
export function limitParam(max: number, fallback: number) {
  return v.optional(
    v.pipe(
      v.string(),
      v.check((raw) => /^\d{1,4}$/.test(raw) && Number(raw) >= 1 && Number(raw) <= max, limitMessage(max)),
      v.description(`Items per page, 1 to ${max} (default ${fallback}).`),
      v.transform(Number),
    ),
  );
}

/** The `cursor` of a page query: a `next_cursor` of an answer, which `read` must accept. */
export function cursorParam(read: (raw: string) => unknown) {
  return v.optional(
    v.pipe(
      v.string(),
      v.check((raw) => read(raw) !== undefined, InvalidCursor),
      v.description("The `next_cursor` of the previous page; without it, the first page."),
    ),
  );
}
