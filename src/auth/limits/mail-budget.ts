import type { Config } from "../../config";
import type { Logger } from "../../lib/log";
import { DAY, HOUR } from "../../lib/units";
import type { Database } from "../../types";
import { claimWindow, releaseWindow } from "./windows";

/**
 * The deployment's mail budget: MAIL_HOURLY_LIMIT mails an hour and MAIL_DAILY_LIMIT a day, of every kind
 * and every account together. A mail account sends only so many a day (a consumer mailbox about 500);
 * past that the provider refuses every mail, the owner's reset codes included, for a day. So the service
 * stops short of it: a mail beyond the budget is not sent, the request answers as it always does
 * (registration still 201), and `mail_budget_exhausted` is logged for an operator to alert on.
 *
 * Each mail claims a slot of both windows in one batch, before it is sent; if only one had room, the
 * other's slot is given back. A burst cannot send more than the budget.
 */
const HOURLY = "mails_hourly";
const DAILY = "mails_daily";

export async function claimMailBudget(
  db: Database,
  config: Pick<Config, "mailHourlyLimit" | "mailDailyLimit">,
  log: Logger,
  kind: string,
  now: number,
): Promise<boolean> {
  const [[hour], [day]] = await db.batch([
    claimWindow(db, HOURLY, config.mailHourlyLimit, now, HOUR),
    claimWindow(db, DAILY, config.mailDailyLimit, now, DAY),
  ]);
  if (hour && day) return true;
  if (hour) await releaseWindow(db, HOURLY, hour.windowStart);
  if (day) await releaseWindow(db, DAILY, day.windowStart);
  log.warn("mail_budget_exhausted", {
    kind,
    budget: hour ? "daily" : "hourly",
    limit: hour ? config.mailDailyLimit : config.mailHourlyLimit,
  });
  return false;
}
