import { and, eq, sql } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import { deploymentWindows } from "../db/schema";
import { setRetryAfter } from "../lib/http";
import type { AppEnv } from "../types";
import { claimWindowSql, windowWait } from "./limits";
import { AuthMessage } from "./messages";

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
  const window = claimWindowSql(deploymentWindows.windowStart, deploymentWindows.count, limit, now);
  const [[claim], [state]] = await db.batch([
    db
      .insert(deploymentWindows)
      .values({ name: NAME, windowStart: now, count: 1 })
      .onConflictDoUpdate({ target: deploymentWindows.name, set: { windowStart: window.start, count: window.count }, setWhere: window.hasRoom })
      .returning({ windowStart: deploymentWindows.windowStart }),
    db.select({ start: deploymentWindows.windowStart, count: deploymentWindows.count }).from(deploymentWindows).where(eq(deploymentWindows.name, NAME)),
  ]);
  if (!claim) {
    log.warn("failed_code_budget_exhausted", { limit, windowStart: state?.start });
    setRetryAfter(c, state ? windowWait(state, limit, now) : 0);
    return c.text(AuthMessage.codeBudgetExhausted, 429);
  }
  await next();
  if (c.res.status !== 401) {
    await db
      .update(deploymentWindows)
      .set({ count: sql`max(${deploymentWindows.count} - 1, 0)` })
      .where(and(eq(deploymentWindows.name, NAME), eq(deploymentWindows.windowStart, claim.windowStart)));
  }
});
