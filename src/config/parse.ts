/** The readers every setting is checked with: a present but unusable value is a ConfigError naming it. */

/** A setting that is present but unusable; reported as a 500 with a log line naming it. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** A group of settings that cannot be used, and why: only what depends on it is refused (never the whole API). */
export interface Unavailable {
  problem: string;
}

export function intSetting(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}`);
  }
  return value;
}

export function choice<T extends string>(name: string, raw: string | undefined, allowed: readonly T[], fallback: T): T {
  const value = nonEmpty(raw)?.toLowerCase() ?? fallback;
  if (!allowed.includes(value as T)) throw new ConfigError(`${name} must be one of: ${allowed.join(", ")}`);
  return value as T;
}

export function nonEmpty(raw: string | undefined): string | undefined {
  return raw === undefined || raw.trim() === "" ? undefined : raw.trim();
}

export function list(raw: string | undefined): string[] {
  return (raw ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/** The group `read` reads, or its problem: a ConfigError there refuses only what uses the group. */
export function group<T>(read: () => T): T | Unavailable {
  try {
    return read();
  } catch (err) {
    if (err instanceof ConfigError) return { problem: err.message };
    throw err;
  }
}
