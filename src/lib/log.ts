import { DrizzleQueryError } from "drizzle-orm/errors";

type Level = "info" | "warn" | "error";

export interface Logger {
  info(event: string, fields?: Record<string, unknown>): void;
  warn(event: string, fields?: Record<string, unknown>): void;
  error(event: string, fields?: Record<string, unknown>): void;
}

/**
 * One JSON object per line, so Workers Logs can index the fields. Callers pass only safe values:
 * never a password, hash, code, token or secret.
 */
export function createLogger(base: Record<string, unknown> = {}): Logger {
  const write = (level: Level, event: string, fields: Record<string, unknown> = {}) => {
    const line = JSON.stringify({ time: new Date().toISOString(), level, event, ...base, ...fields });
    if (level === "error") console.error(line);
    else if (level === "warn") console.warn(line);
    else console.log(line);
  };
  return {
    info: (event, fields) => write("info", event, fields),
    warn: (event, fields) => write("warn", event, fields),
    error: (event, fields) => write("error", event, fields),
  };
}

/**
 * The name and message of an error, safe for a log line. Drizzle's query errors carry the SQL and its
 * parameters (e-mail, hash, code) in their message, so for those only the driver's own cause is kept.
 */
export function describeError(err: unknown): { errorName: string; errorMessage: string } {
  if (err instanceof DrizzleQueryError) {
    const cause = err.cause instanceof Error ? err.cause.message : "no cause given";
    return { errorName: "DrizzleQueryError", errorMessage: safeMessage(cause) };
  }
  if (err instanceof Error) return { errorName: err.name, errorMessage: safeMessage(err.message) };
  return { errorName: "NonError", errorMessage: "a non-Error value was thrown" };
}

/** Masked before it is cut, so that no address is cut short of its `@` and left whole. */
function safeMessage(message: string): string {
  return maskEmails(message).slice(0, 300);
}

/** An e-mail address as it may appear in a log line: first character and domain, `a***@example.com`. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf("@");
  if (at < 1) return "***";
  return `${String.fromCodePoint(email.codePointAt(0)!)}***${email.slice(at)}`;
}

// Anything shaped like an address: an `@` with characters on both sides up to white space, brackets,
// quotes or separators, as in SMTP replies that echo a recipient (`550 <jane@example.com>: rejected`).
const ADDRESS_SHAPED = /[^\s<>()[\]\\,;:"@]+@[^\s<>()[\]\\,;:"@]+/gu;

/** `text` with every address-shaped part masked as `maskEmail` does. */
export function maskEmails(text: string): string {
  return text.replace(ADDRESS_SHAPED, (address) => maskEmail(address));
}
