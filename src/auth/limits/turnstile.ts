import type { Context } from "hono";
import { describeError } from "../../lib/log";
import type { AppEnv } from "../../types";
import { AuthMessage } from "../messages";
import { TURNSTILE_TIMEOUT_MS } from "../policy";

/**
 * Cloudflare Turnstile on the endpoints anyone can use to make us send mail (register, resend the code,
 * forgot-password), when TURNSTILE_SECRET_KEY is set: the answer to floods from many clients, which the
 * per-client limits cannot tell apart from many people. The token comes in the `cf-turnstile-response`
 * body field or header (a web page's widget puts it in a form field; an app may send it as a header), and
 * is checked with Turnstile's siteverify, with the client's address. Without the secret nothing is asked.
 */

export const TURNSTILE_FIELD = "cf-turnstile-response";

/** The refusal to answer, or undefined when the request may go on. */
export async function turnstileRefusal(c: Context<AppEnv>, bodyToken: string | undefined) {
  const turnstile = c.var.config.turnstile;
  if (!turnstile) return undefined;
  const token = bodyToken ?? c.req.header(TURNSTILE_FIELD);
  if (!token) return c.text(AuthMessage.turnstileRequired, 400);
  const form = new URLSearchParams({ secret: turnstile.secret, response: token });
  const ip = c.req.header("CF-Connecting-IP");
  if (ip) form.set("remoteip", ip);
  try {
    const answer = await fetch(turnstile.verifyUrl, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: form.toString(),
      signal: AbortSignal.timeout(TURNSTILE_TIMEOUT_MS),
    });
    const outcome: unknown = await answer.json();
    if (typeof outcome === "object" && outcome !== null && "success" in outcome && outcome.success === true)
      return undefined;
    c.var.log.warn("turnstile_refused", {
      errorCodes:
        typeof outcome === "object" && outcome !== null && "error-codes" in outcome
          ? outcome["error-codes"]
          : undefined,
    });
    return c.text(AuthMessage.turnstileFailed, 403);
  } catch (err) {
    // Fail closed: a check that cannot be made lets no one through, and says to try again.
    c.var.log.error("turnstile_unavailable", describeError(err));
    return c.text(AuthMessage.turnstileUnavailable, 503);
  }
}
