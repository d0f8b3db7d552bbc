import { createMiddleware } from "hono/factory";
import { setRetryAfter } from "../../lib/http";
import type { AppEnv } from "../../types";
import { AuthMessage } from "../messages";
import { claimWindow, releaseWindow, waitFor, windowState } from "./windows";

/**
 * The deployment-wide budget of failed code tries (verification, reset and e-mail change codes of every
 * account), FAILED_CODE_HOURLY_LIMIT an hour. Each account's codes are already bounded (5 tries a code,
 * 15 an hour); this bounds what someone guessing across many accounts gets from the whole service.
 *
 * A try claims one slot of the window with one conditional upsert before its code is compared (so a
 * burst cannot overshoot it), and gives it back unless its answer is the 401 of a wrong, expired or
 * unknown code: a right code, a malformed request or an account's own throttle spends nothing of it.
 * Once it is used up every code try answers 429 until the hour is over, and `failed_code_budget_exhausted`
 * is logged for an operator to alert on.
 */
const NAME = "failed_code_tries";

export const codeTryBudget = createMiddleware<AppEnv>(async (c, next) => {
  const { db, log, config } = c.var;
  const now = Date.now();
  const limit = config.failedCodeHourlyLimit;
  const [[claim], [state]] = await db.batch([claimWindow(db, NAME, limit, now), windowState(db, NAME)]);
  if (!claim) {
    log.warn("failed_code_budget_exhausted", { limit, windowStart: state?.start });
    setRetryAfter(c, waitFor(state, limit, now));
    return c.text(AuthMessage.codeBudgetExhausted, 429);
  }
  await next();
  if (c.res.status !== 401) await releaseWindow(db, NAME, claim.windowStart);
});
