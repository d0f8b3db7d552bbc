import { ConfigError, nonEmpty } from "./parse";

/** The settings of the app's web pages: APP_URL (where the links in mails point) and Cloudflare Turnstile (the widget on its forms). */

/** An absolute http(s) URL without a query, fragment or trailing slash, or undefined when unset. */
export function appUrl(raw: string | undefined): string | undefined {
  const value = nonEmpty(raw);
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError("APP_URL must be an absolute http(s) URL");
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || url.search !== "" || url.hash !== "") {
    throw new ConfigError("APP_URL must be an absolute http(s) URL without a query or fragment");
  }
  return value.replace(/\/+$/, "");
}

/** Turnstile's siteverify endpoint. */
const TURNSTILE_VERIFY_URL = "https://challenges.cloudflare.com/turnstile/v0/siteverify";

export function turnstileOf(
  env: Env & { TURNSTILE_SECRET_KEY?: string },
): { secret: string; verifyUrl: string } | undefined {
  const secret = nonEmpty(env.TURNSTILE_SECRET_KEY);
  if (secret === undefined) return undefined;
  const verifyUrl = nonEmpty(env.TURNSTILE_VERIFY_URL) ?? TURNSTILE_VERIFY_URL;
  if (!URL.canParse(verifyUrl)) throw new ConfigError("TURNSTILE_VERIFY_URL must be an absolute URL");
  return { secret, verifyUrl };
}
