import { createMiddleware } from "hono/factory";
import { setRetryAfter } from "../../lib/http";
import type { AppEnv } from "../../types";
import { AuthMessage } from "../messages";
import { claimWindow, releaseWindow, waitFor, windowState } from "./windows";

/**
 * The deployment-wide budget of failed code tries (verification, reset and e-mail change codes of every
 * account), FAILED_CODE_HOURLY_LIMIT an hour: what someone guessing across many accounts gets from the
 * whole service, beside each code's own 5 tries and each account's 15 an hour, which stay as they are.
 *
 * A try claims one slot of the window with one conditional upsert before its code is compared (so a
 * burst cannot overshoot it), and gives it back unless its answer is the 401 of a wrong, expired or
 * unknown code. Once the budget is used up, a wrong code answers 429 instead of 401 until the hour is
 * over, but a right code with tries left on its own request still succeeds: the budget must never turn
 * into a way to lock every user out. `failed_code_budget_exhausted` is logged for an operator to alert on.
 */
const NAME = "failed_code_tries";

export const codeTryBudget = createMiddleware<AppEnv>(async (c, next) => {
  const { db, log, config } = c.var;
  const now = Date.now();
  const limit = config.failedCodeHourlyLimit;
  const [[claim], [state]] = await db.batch([claimWindow(db, NAME, limit, now), windowState(db, NAME)]);
  if (!claim) log.warn("failed_code_budget_exhausted", { limit, windowStart: state?.start });
  await next();
  // A wrong code's 401 carries no WWW-Authenticate: that one belongs to a missing or dead access token.
  const wrongCode = c.res.status === 401 && !c.res.headers.has("WWW-Authenticate");
  if (claim && !wrongCode) await releaseWindow(db, NAME, claim.windowStart);
  if (!claim && wrongCode) {
    c.res = c.text(AuthMessage.codeBudgetExhausted, 429);
    setRetryAfter(c, waitFor(state, limit, now));
  }
});
