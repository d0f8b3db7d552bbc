import type { Config } from "../../config";
import type { Logger } from "../../lib/log";
import { DAY, HOUR } from "../../lib/units";
import type { Database } from "../../types";
import { NOTICE_COALESCE_MS } from "../policy";
import { claimWindow, releaseWindow, shareOf } from "./windows";

/**
 * The deployment's mail budget: MAIL_HOURLY_LIMIT mails an hour and MAIL_DAILY_LIMIT a day, of every kind
 * and every account together. A mail account sends only so many a day (a consumer mailbox about 500);
 * past that the provider refuses every mail, the owner's reset codes included, for a day. So the service
 * stops short of it: a mail beyond the budget is not sent, the request answers as it always does
 * (registration still 201), and `mail_budget_exhausted` is logged for an operator to alert on.
 *
 * No one may spend that budget for everybody else (docs/security.md, "The shared budgets"):
 * - anyone can make us mail an address nobody has proven (register, resend, an e-mail change's code, the reset of an
 *   unverified account): such mail may spend at most half of each window, so that the other half always stays for
 *   mail to verified accounts (their reset codes and notices), whatever a flood of registrations does; and one
 *   client (lib/client-key.ts) may ask for at most MAIL_UNVERIFIED_CLIENT_HOURLY_LIMIT of them an hour;
 * - every mail, of any kind and audience, also counts in a window of the account it concerns and one of the client
 *   that asked, an hour and a day each: one account, and one client, may spend at most one of BUDGET_SHARES
 *   shares of each budget. With unverified mail held to half, at least a quarter stays for everybody else;
 * - a notice (a password changed, a passkey added, …) goes to an account once per NOTICE_COALESCE_MS of each kind:
 *   its repeats are coalesced into that one, so repeating an action cannot turn its notices into a flood.
 * A registration whose mail was held back gets it later with resend-verification. Optional Turnstile
 * (limits/turnstile.ts) answers floods from many clients.
 *
 * Each mail claims a slot of every window it counts in, in one batch, before it is sent; if any had no
 * room, the others' slots are given back. A burst cannot send more than the budget.
 */

/** Who a mail goes to: an address some account has proven (`verified`), or one nobody has yet. */
export type Audience = "verified" | "unverified";

/** One mail as the budget sees it: its kind and audience, the account it concerns and the client that asked. */
export interface BudgetedMail {
  kind: string;
  audience: Audience;
  account: number;
  client: string;
  /** A notice whose repeats within NOTICE_COALESCE_MS are coalesced into the first. */
  coalesce: boolean;
}

type Limits = Pick<Config, "mailHourlyLimit" | "mailDailyLimit" | "mailUnverifiedClientHourlyLimit">;

/** The share of each window mail to unverified addresses may spend. */
const unverifiedShare = (limit: number) => Math.max(1, Math.floor(limit / 2));

interface BudgetWindow {
  budget: string;
  name: string;
  limit: number;
  length: number;
}

/** The windows one mail counts in, each with its limit and length. */
function windowsOf(config: Limits, mail: BudgetedMail): BudgetWindow[] {
  const hourly = config.mailHourlyLimit;
  const daily = config.mailDailyLimit;
  const { account, client } = mail;
  const windows: BudgetWindow[] = [
    { budget: "hourly", name: "mails_hourly", limit: hourly, length: HOUR },
    { budget: "daily", name: "mails_daily", limit: daily, length: DAY },
    { budget: "account_hourly", name: `mails_account:${account}`, limit: shareOf(hourly), length: HOUR },
    { budget: "account_daily", name: `mails_account_daily:${account}`, limit: shareOf(daily), length: DAY },
    { budget: "client_hourly", name: `mails_client:${client}`, limit: shareOf(hourly), length: HOUR },
    { budget: "client_daily", name: `mails_client_daily:${client}`, limit: shareOf(daily), length: DAY },
  ];
  if (mail.coalesce)
    windows.push({ budget: "notice", name: `notice:${mail.kind}:${account}`, limit: 1, length: NOTICE_COALESCE_MS });
  if (mail.audience === "unverified") {
    windows.push(
      { budget: "unverified_hourly", name: "mails_unverified_hourly", limit: unverifiedShare(hourly), length: HOUR },
      { budget: "unverified_daily", name: "mails_unverified_daily", limit: unverifiedShare(daily), length: DAY },
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
  mail: BudgetedMail,
  now: number,
): Promise<boolean> {
  const windows = windowsOf(config, mail);
  const [first, ...rest] = windows.map(({ name, limit, length }) => claimWindow(db, name, limit, now, length));
  const claims = await db.batch([first!, ...rest]);
  const refused = windows.filter((_, i) => claims[i]!.length === 0);
  if (refused.length === 0) return true;
  const given = windows.flatMap((window, i) =>
    claims[i]![0] ? [releaseWindow(db, window.name, claims[i]![0].windowStart)] : [],
  );
  if (given.length > 0) await db.batch([given[0]!, ...given.slice(1)]);
  // A repeated notice is routine (the first of the window went out); a budget running out is an operator's alert.
  if (refused.some((window) => window.budget === "notice")) {
    log.info(`${mail.kind}_mail_coalesced`, { userId: mail.account });
    return false;
  }
  const [budget] = refused;
  log.warn("mail_budget_exhausted", {
    kind: mail.kind,
    audience: mail.audience,
    budget: budget!.budget,
    limit: budget!.limit,
    ...(budget!.budget.startsWith("account") && { userId: mail.account }),
    ...(budget!.budget.startsWith("client") && { client: mail.client }),
  });
  return false;
}
