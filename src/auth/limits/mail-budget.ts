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
 * Anyone can make us mail an address nobody has proven (register, resend, an e-mail change's code, the
 * reset of an unverified account): such mail may spend at most half of each window, so that the other
 * half always stays for mail to verified accounts (their reset codes and notices), whatever a flood of
 * registrations does; and one client (lib/client-key.ts) may ask for at most
 * MAIL_UNVERIFIED_CLIENT_HOURLY_LIMIT of them an hour. A registration whose mail was held back gets it
 * later with resend-verification. Optional Turnstile (limits/turnstile.ts) answers floods from many clients.
 *
 * Each mail claims a slot of every window it counts in, in one batch, before it is sent; if any had no
 * room, the others' slots are given back. A burst cannot send more than the budget.
 */

/** Who a mail goes to: an address some account has proven (`verified`), or one nobody has yet. */
export type Audience = "verified" | "unverified";

type Limits = Pick<Config, "mailHourlyLimit" | "mailDailyLimit" | "mailUnverifiedClientHourlyLimit">;

/** The share of each window mail to unverified addresses may spend. */
const unverifiedShare = (limit: number) => Math.max(1, Math.floor(limit / 2));

/** The windows one mail counts in, each with its limit and length. */
function windowsOf(config: Limits, audience: Audience, client: string) {
  const windows = [
    { budget: "hourly", name: "mails_hourly", limit: config.mailHourlyLimit, length: HOUR },
    { budget: "daily", name: "mails_daily", limit: config.mailDailyLimit, length: DAY },
  ];
  if (audience === "unverified") {
    windows.push(
      {
        budget: "unverified_hourly",
        name: "mails_unverified_hourly",
        limit: unverifiedShare(config.mailHourlyLimit),
        length: HOUR,
      },
      {
        budget: "unverified_daily",
        name: "mails_unverified_daily",
        limit: unverifiedShare(config.mailDailyLimit),
        length: DAY,
      },
      {
        budget: "unverified_client",
        name: `mails_unverified_client:${client}`,
        limit: config.mailUnverifiedClientHourlyLimit,
        length: HOUR,
      },
    );
  }
  return windows;
}

export async function claimMailBudget(
  db: Database,
  config: Limits,
  log: Logger,
  mail: { kind: string; audience: Audience; client: string },
  now: number,
): Promise<boolean> {
  const windows = windowsOf(config, mail.audience, mail.client);
  const [first, ...rest] = windows.map(({ name, limit, length }) => claimWindow(db, name, limit, now, length));
  const claims = await db.batch([first!, ...rest]);
  const refused = windows.filter((_, i) => claims[i]!.length === 0);
  if (refused.length === 0) return true;
  const given = windows.flatMap((window, i) =>
    claims[i]![0] ? [releaseWindow(db, window.name, claims[i]![0].windowStart)] : [],
  );
  if (given.length > 0) await db.batch([given[0]!, ...given.slice(1)]);
  log.warn("mail_budget_exhausted", {
    kind: mail.kind,
    audience: mail.audience,
    budget: refused[0]!.budget,
    limit: refused[0]!.limit,
  });
  return false;
}
