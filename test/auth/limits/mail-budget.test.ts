import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { DAY, HOUR } from "../../../src/lib/units";
import { Contract } from "../../contract";
import { account, bearer, changeEmail, logIn, NEW_PASSWORD, otherCode, pastCooldown } from "../../support/accounts";
import { base32Decode, stepAt, totpAt } from "../../../src/lib/totp";
import { SoftwarePasskey } from "../passkeys/authenticator";
import {
  creationOptions,
  registeredPasskey,
  registerWith as registerPasskey,
  signedInAccount,
} from "../passkeys/support";
import {
  anotherClient,
  call,
  callWithEnv,
  captureLogs,
  PASSWORD,
  randomEmail,
  tally,
  TEXT,
  textOf,
} from "../../support/app";
import { CodePrefix, codesMailed, mailsWithSubject, Subject } from "../../support/mail";
import {
  BUDGET_SHARES,
  EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR,
  EMAIL_CHANGE_TRIES_PER_TARGET_PER_HOUR,
} from "../../../src/auth/policy";

/**
 * The deployment's mail budget (MAIL_HOURLY_LIMIT, MAIL_DAILY_LIMIT, the share of unverified addresses and
 * the cap per client; src/auth/limits/mail-budget.ts), on a
 * database of its own: the budget it uses up is shared by every account, so on the shared database it
 * would stop the mails of every other test. And the caps per target address of an e-mail change, on the
 * shared database (each test's target address is its own).
 */

const db = env.MAIL_DB;

beforeAll(async () => {
  await applyD1Migrations(db, env.TEST_MIGRATIONS);
});

afterEach(() => {
  vi.restoreAllMocks();
});

type Settings = Awaited<ReturnType<typeof budgetOf>>;

/** A fresh budget of `hourly` mails an hour and `daily` a day. */
async function budgetOf(hourly: number, daily = 1_000) {
  await db.prepare("DELETE FROM deployment_windows").run();
  return { DB: db, MAIL_HOURLY_LIMIT: String(hourly), MAIL_DAILY_LIMIT: String(daily) };
}

/** Moves a named window back in time by `ms`, as if that much had passed since it started. */
async function age(name: string, ms: number): Promise<void> {
  await db.prepare("UPDATE deployment_windows SET window_start = window_start - ? WHERE name = ?").bind(ms, name).run();
}

/** A registration from a client of its own: the deployment's windows, not one client's share, are what it meets. */
function registerWith(settings: Awaited<ReturnType<typeof budgetOf>>, email: string) {
  return callWithEnv(settings, "POST", "/auth/register", { email, password: PASSWORD }, anotherClient());
}

/** How many verification codes reached each address, in order. */
async function verificationMails(addresses: string[]): Promise<number[]> {
  return Promise.all(addresses.map(async (address) => (await codesMailed(address, CodePrefix.verification)).length));
}

describe("the deployment's mail budget", () => {
  it("sends at most half of MAIL_HOURLY_LIMIT to unverified addresses: 3 mails of 40 registrations sent together with 6 an hour; every registration still answers 201", async () => {
    const settings = await budgetOf(6);
    const logs = captureLogs();
    const addresses = Array.from({ length: 40 }, () => randomEmail("budget"));
    const responses = await Promise.all(addresses.map((email) => registerWith(settings, email)));

    expect(tally(responses)).toEqual({ 201: 40 });
    expect(await Promise.all(responses.map((response) => response.text()))).toEqual(
      Array(40).fill(Contract.userCreated),
    );
    const mailed = await verificationMails(addresses);
    expect(mailed.filter((count) => count === 1)).toHaveLength(3);
    expect(mailed.filter((count) => count === 0)).toHaveLength(37);
    const refused = logs.filter((line) => line.event === "mail_budget_exhausted");
    expect(refused).toHaveLength(37);
    expect(refused[0]).toMatchObject({
      level: "warn",
      kind: "verification",
      audience: "unverified",
      budget: "unverified_hourly",
      limit: 3,
    });
    // Every refused account still exists, unverified, with its code stored: a resend later can mail it.
    expect(
      await db.prepare("SELECT count(*) AS n FROM users WHERE email LIKE 'budget-%' AND isVerified = 0").first("n"),
    ).toBeGreaterThanOrEqual(40);
  });

  it("refuses one at a time once the hour is used up, and sends again in the next hour", async () => {
    const settings = await budgetOf(4);
    const [first, second, third, fourth] = Array.from({ length: 4 }, () => randomEmail("budget"));
    for (const email of [first!, second!, third!])
      expect(await textOf(await registerWith(settings, email))).toEqual({
        status: 201,
        type: TEXT,
        body: Contract.userCreated,
      });
    expect(await verificationMails([first!, second!, third!])).toEqual([1, 1, 0]);

    await age("mails_hourly", HOUR);
    await age("mails_unverified_hourly", HOUR);
    expect((await registerWith(settings, fourth!)).status).toBe(201);
    expect(await verificationMails([fourth!])).toEqual([1]);
  });

  it("holds the daily budget when the hours have room, and logs which budget refused", async () => {
    const settings = await budgetOf(100, 4);
    const logs = captureLogs();
    const addresses = Array.from({ length: 3 }, () => randomEmail("budget"));
    for (const email of addresses) expect((await registerWith(settings, email)).status).toBe(201);
    expect(await verificationMails(addresses)).toEqual([1, 1, 0]);
    expect(logs.find((line) => line.event === "mail_budget_exhausted")).toMatchObject({
      budget: "unverified_daily",
      limit: 2,
    });

    // A new hour is not a new day...
    await age("mails_hourly", HOUR);
    await age("mails_unverified_hourly", HOUR);
    const later = randomEmail("budget");
    expect((await registerWith(settings, later)).status).toBe(201);
    expect(await verificationMails([later])).toEqual([0]);
    // ...a new day is.
    await age("mails_daily", DAY);
    await age("mails_unverified_daily", DAY);
    const nextDay = randomEmail("budget");
    expect((await registerWith(settings, nextDay)).status).toBe(201);
    expect(await verificationMails([nextDay])).toEqual([1]);
  });

  it("never lets a refused mail use up the other budget: a mail refused by the day gives its hour back", async () => {
    const settings = await budgetOf(100, 1);
    for (const email of Array.from({ length: 4 }, () => randomEmail("budget"))) await registerWith(settings, email);
    const row = await db
      .prepare("SELECT count FROM deployment_windows WHERE name = 'mails_hourly'")
      .first<number>("count");
    expect(row).toBe(1);
  });
});

/** A verified account on the budget's database, made with room to spare; its address. */
async function verifiedOnBudgetDb(): Promise<string> {
  const settings = await budgetOf(1_000, 1_000);
  const email = randomEmail("owner");
  expect((await registerWith(settings, email)).status).toBe(201);
  const code = await db
    .prepare(
      "SELECT code FROM one_time_codes WHERE purpose = 'verify_email' AND user_id = (SELECT id FROM users WHERE email = ?)",
    )
    .bind(email)
    .first<string>("code");
  expect((await callWithEnv(settings, "POST", "/auth/verify-email", { email, token: code })).status).toBe(200);
  return email;
}

describe("mail to unverified addresses cannot take the whole budget (F1)", () => {
  it("still mails a verified account's reset code after a flood of registrations from 40 clients has spent its share", async () => {
    const owner = await verifiedOnBudgetDb();
    const settings = await budgetOf(10, 60);
    const flood = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        callWithEnv(
          settings,
          "POST",
          "/auth/register",
          { email: randomEmail("flood"), password: PASSWORD },
          { "CF-Connecting-IP": `198.51.100.${i + 1}` },
        ),
      ),
    );
    expect(tally(flood)).toEqual({ 201: 40 });
    expect(await db.prepare("SELECT count FROM deployment_windows WHERE name = 'mails_hourly'").first("count")).toBe(5);

    expect((await callWithEnv(settings, "POST", "/auth/forgot-password", { email: owner })).status).toBe(200);
    expect(await codesMailed(owner, CodePrefix.reset)).toHaveLength(1);
  });

  it(`caps the mail one client causes to unverified addresses (MAIL_UNVERIFIED_CLIENT_HOURLY_LIMIT); another client is mailed`, async () => {
    const settings = { ...(await budgetOf(1_000)), MAIL_UNVERIFIED_CLIENT_HOURLY_LIMIT: "3" };
    const logs = captureLogs();
    const fromOne = Array.from({ length: 8 }, () => randomEmail("one-client"));
    const answers = await Promise.all(
      fromOne.map((email) =>
        callWithEnv(
          settings,
          "POST",
          "/auth/register",
          { email, password: PASSWORD },
          { "CF-Connecting-IP": "192.0.2.1" },
        ),
      ),
    );
    expect(tally(answers)).toEqual({ 201: 8 });
    expect((await verificationMails(fromOne)).filter((count) => count === 1)).toHaveLength(3);
    expect(logs.find((line) => line.event === "mail_budget_exhausted")).toMatchObject({
      budget: "unverified_client",
      limit: 3,
    });
    const other = randomEmail("other-client");
    expect(
      (
        await callWithEnv(
          settings,
          "POST",
          "/auth/register",
          { email: other, password: PASSWORD },
          { "CF-Connecting-IP": "192.0.2.2" },
        )
      ).status,
    ).toBe(201);
    expect(await verificationMails([other])).toEqual([1]);
  });

  it("lets a registration whose mail the budget held back get it later with resend-verification", async () => {
    const settings = await budgetOf(2);
    await registerWith(settings, randomEmail("first"));
    const held = randomEmail("held");
    expect((await registerWith(settings, held)).status).toBe(201);
    expect(await verificationMails([held])).toEqual([0]);

    await age("mails_hourly", HOUR);
    await age("mails_unverified_hourly", HOUR);
    await db.prepare("UPDATE users SET lastMailAt = lastMailAt - 60000 WHERE email = ?").bind(held).run();
    expect(await textOf(await callWithEnv(settings, "POST", "/auth/resend-verification", { email: held }))).toEqual({
      status: 200,
      type: TEXT,
      body: AuthMessage.resendAccepted,
    });
    expect(await verificationMails([held])).toEqual([1]);
  });
});

/** Verified accounts written straight to the budget's database (no mail spent on them); their addresses. */
async function verifiedRows(count: number): Promise<string[]> {
  const addresses = Array.from({ length: count }, () => randomEmail("mailbox"));
  await db.batch(
    addresses.map((email) =>
      db
        .prepare("INSERT INTO users (email, password, isVerified, createdAt) VALUES (?, 'x', 1, ?)")
        .bind(email, Date.now()),
    ),
  );
  return addresses;
}

/** How many mails a named window of the budget's database has counted. */
async function counted(name: string): Promise<number> {
  return (
    (await db.prepare("SELECT count FROM deployment_windows WHERE name = ?").bind(name).first<number>("count")) ?? 0
  );
}

describe("no account and no client spends the shared budget (N6)", () => {
  /** One round of every mail-sending route an account can drive, from one client (no CF-Connecting-IP: "unknown"). */
  async function floodRound(settings: Settings, attacker: { email: string; token: string }, others: string[]) {
    const send = (method: string, path: string, body?: unknown) =>
      callWithEnv(settings, method, path, body, bearer(attacker.token));
    // Two password changes, back to the first password: two notices asked for.
    await send("POST", "/auth/change-password", { current_password: PASSWORD, new_password: NEW_PASSWORD });
    await send("POST", "/auth/change-password", { current_password: NEW_PASSWORD, new_password: PASSWORD });
    // Reset codes for its own address and for others'.
    for (const email of [attacker.email, ...others]) await send("POST", "/auth/forgot-password", { email });
    // A registration and its resend (unverified addresses), and an e-mail change's code.
    const fresh = randomEmail("flood");
    await send("POST", "/auth/register", { email: fresh, password: PASSWORD });
    await send("POST", "/auth/resend-verification", { email: fresh });
    await send("POST", "/auth/change-email", { password: PASSWORD, new_email: randomEmail("target") });
    // Two-factor authentication on and off again: two notices, and a recovery code used.
    const enrolled = await send("POST", "/auth/mfa/totp", { password: PASSWORD });
    const { secret } = await enrolled.json<{ secret: string }>();
    const code = await totpAt(base32Decode(secret), stepAt(Date.now()));
    const confirmed = await send("POST", "/auth/mfa/totp/confirm", { code });
    const { recovery_codes: codes } = await confirmed.json<{ recovery_codes: string[] }>();
    await send("DELETE", "/auth/mfa/totp", { password: PASSWORD, code: codes[0] });
    // A passkey added and removed: two notices.
    const { id } = await registeredPasskey(attacker.token, {}, settings);
    await send("DELETE", `/auth/passkeys/${id}`, { password: PASSWORD });
  }

  it("keeps a verified account's reset mail going out after one account floods every mail-sending route from one client", async () => {
    const attacker = await verifiedOnBudgetDb();
    const victim = await verifiedOnBudgetDb();
    const others = await verifiedRows(12);
    const settings = await budgetOf(40, 240);
    const login = await callWithEnv(settings, "POST", "/auth/login", { email: attacker, password: PASSWORD });
    const { token } = await login.json<{ token: string }>();
    // Four rounds ask for more than MAIL_HOURLY_LIMIT mails: without the shares, the flood alone spends the hour.
    for (let round = 0; round < 4; round++)
      await floodRound(settings, { email: attacker, token }, others.slice(3 * round, 3 * round + 3));

    // All of it came from one account and one client: one share of the hour (40 / BUDGET_SHARES), whatever it asked.
    expect(await counted("mails_hourly")).toBeLessThanOrEqual(40 / BUDGET_SHARES);
    expect(await counted("mails_client:unknown")).toBe(await counted("mails_hourly"));
    const userId = (await db.prepare("SELECT id FROM users WHERE email = ?").bind(attacker).first<number>("id"))!;
    expect(await counted(`mails_account:${userId}`)).toBeLessThanOrEqual(40 / BUDGET_SHARES);

    const asked = await callWithEnv(
      settings,
      "POST",
      "/auth/forgot-password",
      { email: victim },
      {
        "CF-Connecting-IP": "192.0.2.77",
      },
    );
    expect(asked.status).toBe(200);
    expect(await codesMailed(victim, CodePrefix.reset)).toHaveLength(1);
  }, 30_000);

  it("holds one client to its share under a burst: of 40 reset requests for 40 addresses sent together, 40 / BUDGET_SHARES mail", async () => {
    const addresses = await verifiedRows(40);
    const settings = await budgetOf(40, 240);
    const logs = captureLogs();
    const answers = await Promise.all(
      addresses.map((email) =>
        callWithEnv(settings, "POST", "/auth/forgot-password", { email }, { "CF-Connecting-IP": "203.0.113.9" }),
      ),
    );
    expect(tally(answers)).toEqual({ 200: 40 });
    const mailed = await Promise.all(
      addresses.map(async (email) => (await codesMailed(email, CodePrefix.reset)).length),
    );
    expect(mailed.filter((count) => count === 1)).toHaveLength(40 / BUDGET_SHARES);
    expect(await counted("mails_client:203.0.113.9")).toBe(40 / BUDGET_SHARES);
    expect(logs.filter((line) => line.event === "mail_budget_exhausted")[0]).toMatchObject({
      kind: "password_reset",
      budget: "client_hourly",
      limit: 40 / BUDGET_SHARES,
      client: "203.0.113.9",
    });
    // Another client's request still mails.
    const [another] = await verifiedRows(1);
    await callWithEnv(
      settings,
      "POST",
      "/auth/forgot-password",
      { email: another },
      { "CF-Connecting-IP": "203.0.113.10" },
    );
    expect(await codesMailed(another!, CodePrefix.reset)).toHaveLength(1);
  });

  it("holds one account to its share whatever the clients: mails about it stop there, and other accounts' go on", async () => {
    const [target, other] = await verifiedRows(2);
    const settings = await budgetOf(8, 240);
    const logs = captureLogs();
    for (let i = 0; i < 3; i++)
      expect(
        (await callWithEnv(settings, "POST", "/auth/forgot-password", { email: target }, anotherClient())).status,
      ).toBe(200);
    expect(await codesMailed(target!, CodePrefix.reset)).toHaveLength(8 / BUDGET_SHARES);
    expect(logs.find((line) => line.event === "mail_budget_exhausted")).toMatchObject({
      budget: "account_hourly",
      limit: 8 / BUDGET_SHARES,
    });
    await callWithEnv(settings, "POST", "/auth/forgot-password", { email: other }, anotherClient());
    expect(await codesMailed(other!, CodePrefix.reset)).toHaveLength(1);
  });
});

describe("notices of one kind are coalesced into one per NOTICE_COALESCE_MS", () => {
  it("mails one password-changed notice for three changes within the hour, and logs the others as coalesced", async () => {
    const email = await account();
    const { token } = await logIn(email);
    const logs = captureLogs();
    const passwords = [PASSWORD, NEW_PASSWORD, PASSWORD, NEW_PASSWORD];
    for (let i = 0; i < 3; i++) {
      const body = { current_password: passwords[i], new_password: passwords[i + 1] };
      expect((await call("POST", "/auth/change-password", body, bearer(token))).status).toBe(200);
    }
    expect(await mailsWithSubject(email, Subject.passwordChanged)).toHaveLength(1);
    expect(logs.filter((line) => line.event === "password_changed_mail_coalesced")).toHaveLength(2);
    expect(logs.filter((line) => line.event === "mail_budget_exhausted")).toHaveLength(0);
  });

  it("mails one passkey-added notice for ten passkeys added together", async () => {
    const { email, session } = await signedInAccount();
    const passkeys = await Promise.all(Array.from({ length: 10 }, () => SoftwarePasskey.create()));
    // The options one after the other (each is a step-up of the session), the verifies together.
    const options: Awaited<ReturnType<typeof creationOptions>>[] = [];
    for (const _ of passkeys) options.push(await creationOptions(session.token));
    const added = await Promise.all(
      passkeys.map((passkey, i) => registerPasskey(session.token, passkey, { options: options[i] })),
    );
    expect(tally(added)).toEqual({ 201: 10 });
    expect(await mailsWithSubject(email, "A Passkey Was Added to Your Account")).toHaveLength(1);
  });
});

describe("the caps per target address of an e-mail change", () => {
  /** `count` verified accounts, each logged in; their access tokens. */
  async function askers(count: number): Promise<string[]> {
    return Promise.all(
      Array.from({ length: count }, async () => {
        const email = await account();
        // Past the cooldown after the verification mail: each account's own allowance has room.
        await pastCooldown(email);
        return (await logIn(email)).token;
      }),
    );
  }

  it(`mails at most ${EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR} codes an hour to one address, whatever the number of accounts asking together`, async () => {
    const target = randomEmail("outside");
    const tokens = await askers(5);
    const logs = captureLogs();
    const responses = await Promise.all(tokens.map((token) => changeEmail(token, target)));

    expect(tally(responses)).toEqual({
      200: EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR,
      429: 5 - EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR,
    });
    const refused = responses.find((response) => response.status === 429)!;
    expect(await textOf(refused)).toEqual({ status: 429, type: TEXT, body: AuthMessage.emailChangeThrottled });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(HOUR / 1000 - 60);
    expect(await mailsWithSubject(target, Subject.confirmNewEmail)).toHaveLength(
      EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR,
    );
    expect(logs.filter((line) => line.event === "email_change_target_throttled")).toHaveLength(
      5 - EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR,
    );
  });

  it("leaves an account refused by the target's cap its own mail allowance", async () => {
    const target = randomEmail("outside");
    const tokens = await askers(EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR + 1);
    for (const token of tokens.slice(0, -1)) expect((await changeEmail(token, target)).status).toBe(200);
    const last = tokens.at(-1)!;
    expect((await changeEmail(last, target)).status).toBe(429);
    // The same account may still change to another address at once: the refusal spent nothing of its own
    // (its cooldown would have refused a second mail within the minute).
    expect((await changeEmail(last, randomEmail("elsewhere"))).status).toBe(200);
  });

  it(`lets all accounts together try at most ${EMAIL_CHANGE_TRIES_PER_TARGET_PER_HOUR} wrong codes an hour at proving one address, even in a burst`, async () => {
    const target = randomEmail("outside");
    const tokens = await askers(EMAIL_CHANGE_CODES_PER_TARGET_PER_HOUR);
    for (const token of tokens) expect((await changeEmail(token, target)).status).toBe(200);
    const codes = await codesMailed(target, CodePrefix.emailChange);
    expect(codes).toHaveLength(tokens.length);

    // Five wrong tries with each account's code: fifteen the codes alone would allow.
    const wrong = tokens.flatMap((token, i) =>
      Array.from({ length: 5 }, () =>
        call("POST", "/auth/confirm-email-change", { token: otherCode(codes[i]!) }, bearer(token)),
      ),
    );
    const responses = await Promise.all(wrong);
    expect(tally(responses)).toEqual({
      401: EMAIL_CHANGE_TRIES_PER_TARGET_PER_HOUR,
      429: 15 - EMAIL_CHANGE_TRIES_PER_TARGET_PER_HOUR,
    });
    const refused = responses.find((response) => response.status === 429)!;
    expect(await textOf(refused)).toEqual({ status: 429, type: TEXT, body: AuthMessage.codeThrottled });
  });

  it("gives a right code its try back, and lets the owner of the address prove it while others' tries are counted", async () => {
    const target = randomEmail("outside");
    const [owner, other] = await askers(2);
    expect((await changeEmail(owner!, target)).status).toBe(200);
    const [ownerCode] = await codesMailed(target, CodePrefix.emailChange);
    expect((await changeEmail(other!, target)).status).toBe(200);
    for (let i = 0; i < 4; i++) {
      expect(
        (await call("POST", "/auth/confirm-email-change", { token: otherCode(ownerCode!) }, bearer(other!))).status,
      ).toBe(401);
    }
    expect(
      await textOf(await call("POST", "/auth/confirm-email-change", { token: ownerCode }, bearer(owner!))),
    ).toEqual({
      status: 200,
      type: TEXT,
      body: AuthMessage.emailChanged,
    });
    const row = await env.DB.prepare("SELECT count FROM deployment_windows WHERE name = ?")
      .bind(`email_change_tries:${target}`)
      .first<number>("count");
    expect(row).toBe(4);
  });
});
