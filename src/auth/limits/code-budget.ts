import { createMiddleware } from "hono/factory";
import { clientKey } from "../../lib/client-key";
import { setRetryAfter } from "../../lib/http";
import type { AppEnv } from "../../types";
import { AuthMessage } from "../messages";
import { claimWindow, releaseWindow, shareOf, waitFor, windowState } from "./windows";

/**
 * The deployment-wide budget of failed code tries (verification, reset and e-mail change codes of every
 * account), FAILED_CODE_HOURLY_LIMIT an hour: what someone guessing across many accounts gets from the
 * whole service, beside each code's own 5 tries and each account's 15 an hour, which stay as they are. One
 * client (lib/client-key.ts) may spend at most one of BUDGET_SHARES shares of it: past its share its wrong
 * codes answer 429 and claim nothing of the deployment's, so no one client can use the budget up for all.
 *
 * A try claims one slot of each window with one conditional upsert before its code is compared (so a
 * burst cannot overshoot it), and gives them back unless its answer is the 401 of a wrong, expired or
 * unknown code. Once the budget is used up, a wrong code answers 429 instead of 401 until the hour is
 * over, but a right code with tries left on its own request still succeeds: the budget must never turn
 * into a way to lock every user out. `failed_code_budget_exhausted` is logged for an operator to alert on.
 */
const NAME = "failed_code_tries";

export const codeTryBudget = createMiddleware<AppEnv>(async (c, next) => {
  const { db, log, config } = c.var;
  const now = Date.now();
  const limit = config.failedCodeHourlyLimit;
  const client = { name: `failed_code_tries_client:${clientKey(c)}`, limit: shareOf(limit) };
  const [[ofClient], [claim], [clientState], [state]] = await db.batch([
    claimWindow(db, client.name, client.limit, now),
    claimWindow(db, NAME, limit, now),
    windowState(db, client.name),
    windowState(db, NAME),
  ]);
  // Past its share, a client's tries take nothing of the deployment's.
  if (!ofClient && claim) await releaseWindow(db, NAME, claim.windowStart);
  const counted = ofClient && claim;
  if (!claim) log.warn("failed_code_budget_exhausted", { limit, windowStart: state?.start });
  else if (!ofClient) log.warn("failed_code_budget_exhausted", { limit: client.limit, client: clientKey(c) });
  await next();
  // A wrong code's 401 carries no WWW-Authenticate: that one belongs to a missing or dead access token.
  const wrongCode = c.res.status === 401 && !c.res.headers.has("WWW-Authenticate");
  if (counted && !wrongCode)
    await db.batch([releaseWindow(db, NAME, claim.windowStart), releaseWindow(db, client.name, ofClient.windowStart)]);
  if (!counted && wrongCode) {
    c.res = c.text(AuthMessage.codeBudgetExhausted, 429);
    setRetryAfter(c, Math.max(waitFor(state, limit, now), waitFor(clientState, client.limit, now)));
  }
  // A try refused by one window gives back its slot of the other (a right code, or a 429 that counts nothing).
  if (!counted && ofClient) await releaseWindow(db, client.name, ofClient.windowStart);
});
