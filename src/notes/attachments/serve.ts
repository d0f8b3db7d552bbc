import type { Context } from "hono";
import { etagListed, readETags } from "../conditional";
import { AttachmentMessage } from "./messages";
import { SHOWN_INLINE } from "./sniff";
import type { StoredAttachment } from "./store";

/**
 * An attachment's bytes as an answer, the same through the Bearer route and a signed link: its stored type
 * (never one a browser runs), `nosniff`, a sandbox policy so that even a file a browser would render cannot
 * script or reach this origin, kept only by the user's own browser, the ETag of its SHA-256 (304), and one
 * byte range (206, 416).
 */

/**
 * No script, plugin, form or same-origin access; nothing loaded; never framed. The styles are the browser's
 * own for an image shown on its own.
 */
export const ATTACHMENT_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'";

/** One satisfiable byte range, inclusive. */
interface ByteRange {
  start: number;
  end: number;
}

const RANGE = /^bytes=(\d{0,16})-(\d{0,16})$/;

/**
 * The range a `Range` header asks for (RFC 9110 §14): one range, "unsatisfiable" when none of it is in the
 * file, or undefined for the whole file (no header, several ranges, another unit, or a malformed one,
 * which the RFC lets a server ignore).
 */
export function rangeOf(header: string | undefined, size: number): ByteRange | "unsatisfiable" | undefined {
  const match = header === undefined ? null : RANGE.exec(header.trim());
  if (!match || (match[1] === "" && match[2] === "")) return undefined;
  const [first, last] = [match[1]!, match[2]!];
  if (first === "") {
    const suffix = Number(last);
    return suffix === 0 || size === 0 ? "unsatisfiable" : { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  if (last !== "" && Number(last) < start) return undefined;
  if (start >= size) return "unsatisfiable";
  return { start, end: last === "" ? size - 1 : Math.min(Number(last), size - 1) };
}

/** `filename*` as RFC 8187 writes it: UTF-8, percent-encoded beyond its attr-chars. */
function encodedFilename(filename: string): string {
  return encodeURIComponent(filename).replace(/['()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The headers every answer about the bytes carries, 304 and 416 included. */
function fileHeaders(attachment: StoredAttachment): Record<string, string> {
  const shown = SHOWN_INLINE.has(attachment.content_type) ? "inline" : "attachment";
  return {
    ETag: `"${attachment.sha256}"`,
    "Cache-Control": "private",
    "Content-Security-Policy": ATTACHMENT_CSP,
    "X-Content-Type-Options": "nosniff",
    "Accept-Ranges": "bytes",
    "Content-Disposition": `${shown}; filename*=UTF-8''${encodedFilename(attachment.filename)}`,
  };
}

/** Any extra headers of the route (the signed link's cross-origin resource policy). */
export type ExtraHeaders = Record<string, string>;

/** The answer with the attachment's bytes, or a part of them, from `bucket`. */
export async function serveAttachment(
  c: Context,
  bucket: R2Bucket,
  attachment: StoredAttachment,
  extra: ExtraHeaders = {},
) {
  const headers = { ...fileHeaders(attachment), ...extra };
  const ifNoneMatch = readETags(c, "If-None-Match");
  if (ifNoneMatch && etagListed(ifNoneMatch, headers.ETag!)) return c.body(null, 304, headers);
  // If-Range names the copy the client holds a part of: the range applies only to that copy (our ETag is strong).
  const ifRange = c.req.header("If-Range");
  const range =
    ifRange === undefined || ifRange.trim() === headers.ETag
      ? rangeOf(c.req.header("Range"), attachment.size)
      : undefined;
  if (range === "unsatisfiable") {
    return c.json({ error: AttachmentMessage.rangeNotSatisfiable }, 416, {
      ...headers,
      "Content-Range": `bytes */${attachment.size}`,
    });
  }
  const object = await bucket.get(
    attachment.id,
    range && { range: { offset: range.start, length: range.end - range.start + 1 } },
  );
  // Deleted between the row's read and now: as gone as if the row had been.
  if (!object) return c.json({ error: AttachmentMessage.notFound }, 404);
  const length = range ? range.end - range.start + 1 : attachment.size;
  const answer = { ...headers, "Content-Type": attachment.content_type, "Content-Length": String(length) };
  if (!range) return c.body(object.body, 200, answer);
  return c.body(object.body, 206, {
    ...answer,
    "Content-Range": `bytes ${range.start}-${range.end}/${attachment.size}`,
  });
}
