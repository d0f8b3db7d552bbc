import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { BUDGET_SHARES } from "../../../src/auth/policy";
import { Contract } from "../../contract";
import { otherCode } from "../../support/accounts";
import {
  anotherClient,
  callWithEnv as callWithEnvFromOneClient,
  captureLogs,
  PASSWORD,
  randomEmail,
  tally,
  TEXT,
  textOf,
} from "../../support/app";

/**
 * The deployment-wide budget of failed code tries (src/auth/limits/code-budget.ts), on a database of its own:
 * the counter it exhausts is shared by every account, so on the shared database it would refuse the
 * codes of every other test.
 */

const db = env.BUDGET_DB;

beforeAll(async () => {
  await applyD1Migrations(db, env.TEST_MIGRATIONS);
});

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * A request from a client of its own: the tests of the deployment's window must not meet one client's share of it
 * first (the share has tests of its own, below).
 */
function callWithEnv(
  settings: Parameters<typeof callWithEnvFromOneClient>[0],
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return callWithEnvFromOneClient(settings, method, path, body, { ...anotherClient(), ...headers });
}

/** A fresh budget of `limit` failed tries (the window starts with the next try). */
async function budgetOf(limit: number) {
  await db.prepare("DELETE FROM deployment_windows").run();
  // No mail account: registration still answers 201, and the code is read from D1.
  return { DB: db, FAILED_CODE_HOURLY_LIMIT: String(limit), MAIL_EMAIL: "" };
}

/** Registers an unverified account on the budget's database; its stored code. */
async function unverified(settings: Awaited<ReturnType<typeof budgetOf>>): Promise<{ email: string; code: string }> {
  const email = randomEmail("budget");
  expect((await callWithEnv(settings, "POST", "/auth/register", { email, password: PASSWORD })).status).toBe(201);
  const row = await db
    .prepare(
      "SELECT code FROM one_time_codes WHERE purpose = 'verify_email' AND user_id = (SELECT id FROM users WHERE email = ?)",
    )
    .bind(email)
    .first<{ code: string }>();
  return { email, code: row!.code };
}

async function spent(): Promise<number> {
  return (
    (await db
      .prepare("SELECT count FROM deployment_windows WHERE name = 'failed_code_tries'")
      .first<number>("count")) ?? 0
  );
}

describe("the deployment-wide budget of failed code tries", () => {
  it("answers 429 to every wrong code once the hour's failed tries are used up, still lets a right code through (F6), and logs it", async () => {
    const settings = await budgetOf(3);
    const accounts = await Promise.all(Array.from({ length: 5 }, () => unverified(settings)));
    const verify = (email: string, token: string) =>
      callWithEnv(settings, "POST", "/auth/verify-email", { email, token });
    for (const { email, code } of accounts.slice(0, 3)) {
      expect(await textOf(await verify(email, otherCode(code)))).toEqual({
        status: 401,
        type: TEXT,
        body: Contract.invalidToken,
      });
    }
    const logs = captureLogs();
    const [fourth, fifth] = accounts.slice(3) as [{ email: string; code: string }, { email: string; code: string }];
    const refused = await verify(fourth.email, otherCode(fourth.code));
    expect(await textOf(refused)).toEqual({ status: 429, type: TEXT, body: AuthMessage.codeBudgetExhausted });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(3500);
    expect(await textOf(await verify(fifth.email, fifth.code))).toEqual({
      status: 200,
      type: TEXT,
      body: Contract.emailVerified,
    });
    expect(logs.filter((line) => line.event === "failed_code_budget_exhausted")).toHaveLength(2);
    expect(logs.find((line) => line.event === "failed_code_budget_exhausted")).toMatchObject({
      level: "warn",
      limit: 3,
    });
    expect(await spent()).toBe(3);
  });

  it("spends nothing on a right code, a malformed request or a body error", async () => {
    const settings = await budgetOf(1);
    const right = await unverified(settings);
    const wrong = await unverified(settings);
    const verify = (body: unknown) => callWithEnv(settings, "POST", "/auth/verify-email", body);
    expect((await verify({ email: right.email, token: right.code })).status).toBe(200);
    expect((await verify({ email: wrong.email })).status).toBe(400);
    expect(await spent()).toBe(0);
    expect((await verify({ email: wrong.email, token: otherCode(wrong.code) })).status).toBe(401);
    expect((await verify({ email: wrong.email, token: otherCode(wrong.code) })).status).toBe(429);
    // The budget is used up, and the right code with tries left on its own request still verifies.
    expect((await verify({ email: wrong.email, token: wrong.code })).status).toBe(200);
  });

  it("holds under a burst: of 40 wrong codes to 40 accounts sent together with 10 tries left, 10 are compared", async () => {
    const settings = await budgetOf(10);
    const accounts = await Promise.all(Array.from({ length: 40 }, () => unverified(settings)));
    const answers = await Promise.all(
      accounts.map(({ email, code }) =>
        callWithEnv(settings, "POST", "/auth/verify-email", { email, token: otherCode(code) }),
      ),
    );
    expect(tally(answers)).toEqual({ 401: 10, 429: 30 });
    expect(await spent()).toBe(10);
  });

  it("refuses no right code after wrong codes for unknown addresses used the budget up (F6): verification and reset alike", async () => {
    const settings = await budgetOf(5);
    const owner = await unverified(settings);
    const verify = (email: string, token: string) =>
      callWithEnv(settings, "POST", "/auth/verify-email", { email, token });
    const flood = await Promise.all(Array.from({ length: 8 }, () => verify(randomEmail("nobody"), "123456")));
    expect(tally(flood)).toEqual({ 401: 5, 429: 3 });
    expect(await textOf(await verify(owner.email, otherCode(owner.code)))).toEqual({
      status: 429,
      type: TEXT,
      body: AuthMessage.codeBudgetExhausted,
    });
    expect(await textOf(await verify(owner.email, owner.code))).toEqual({
      status: 200,
      type: TEXT,
      body: Contract.emailVerified,
    });

    // A reset asked for now: its right code goes through the exhausted budget too.
    const forgot = await callWithEnv(settings, "POST", "/auth/forgot-password", { email: owner.email });
    const { request_id: requestId } = await forgot.json<{ request_id: string }>();
    const stored = await db
      .prepare("SELECT code FROM reset_requests WHERE id = ?")
      .bind(requestId)
      .first<string>("code");
    const reset = { email: owner.email, request_id: requestId, password: "a brand new passphrase" };
    expect(
      (await callWithEnv(settings, "POST", "/auth/reset-password", { ...reset, token: otherCode(stored!) })).status,
    ).toBe(429);
    expect((await callWithEnv(settings, "POST", "/auth/reset-password", { ...reset, token: stored })).status).toBe(200);
  });

  it("counts reset codes too", async () => {
    const settings = await budgetOf(1);
    const { email } = await unverified(settings);
    const reset = { email, token: "123456", password: "a brand new passphrase", request_id: "no-such-request" };
    expect((await callWithEnv(settings, "POST", "/auth/reset-password", reset)).status).toBe(401);
    expect(await textOf(await callWithEnv(settings, "POST", "/auth/reset-password", reset))).toEqual({
      status: 429,
      type: TEXT,
      body: AuthMessage.codeBudgetExhausted,
    });
  });

  it("counts e-mail change codes too", async () => {
    const settings = await budgetOf(1);
    const { email, code } = await unverified(settings);
    expect((await callWithEnv(settings, "POST", "/auth/verify-email", { email, token: code })).status).toBe(200);
    const login = await callWithEnv(settings, "POST", "/auth/login", { email, password: PASSWORD });
    const { token } = await login.json<{ token: string }>();
    const confirm = () =>
      callWithEnv(
        settings,
        "POST",
        "/auth/confirm-email-change",
        { token: "123456" },
        { Authorization: `Bearer ${token}` },
      );
    expect(await textOf(await confirm())).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidConfirmationCode,
    });
    expect(await textOf(await confirm())).toEqual({ status: 429, type: TEXT, body: AuthMessage.codeBudgetExhausted });
  });
});

describe("one client's share of the failed code tries (BUDGET_SHARES)", () => {
  async function spentBy(client: string): Promise<number> {
    return (
      (await db
        .prepare("SELECT count FROM deployment_windows WHERE name = ?")
        .bind(`failed_code_tries_client:${client}`)
        .first<number>("count")) ?? 0
    );
  }

  it("holds one client to its share: past it, its wrong codes answer 429 and spend nothing of the deployment's; another client's are still 401", async () => {
    const settings = await budgetOf(8);
    const share = 8 / BUDGET_SHARES;
    const one = { "CF-Connecting-IP": "203.0.113.21" };
    const verify = (email: string, token: string, from: Record<string, string>) =>
      callWithEnvFromOneClient(settings, "POST", "/auth/verify-email", { email, token }, from);
    const accounts = await Promise.all(Array.from({ length: share + 2 }, () => unverified(settings)));
    for (const { email, code } of accounts.slice(0, share))
      expect((await verify(email, otherCode(code), one)).status).toBe(401);
    const [next, last] = accounts.slice(share) as [{ email: string; code: string }, { email: string; code: string }];
    const refused = await verify(next.email, otherCode(next.code), one);
    expect(await textOf(refused)).toEqual({ status: 429, type: TEXT, body: AuthMessage.codeBudgetExhausted });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(3500);
    expect(await spent()).toBe(share);
    // The budget still has room for everyone else, and the right code still verifies for the client past its share.
    expect((await verify(last.email, otherCode(last.code), { "CF-Connecting-IP": "203.0.113.22" })).status).toBe(401);
    expect((await verify(next.email, next.code, one)).status).toBe(200);
    expect(await spent()).toBe(share + 1);
    expect(await spentBy("203.0.113.21")).toBe(share);
  });

  it("holds under a burst: of 40 wrong codes sent together from one client with 40 tries in the budget, 10 are compared", async () => {
    const settings = await budgetOf(40);
    const accounts = await Promise.all(Array.from({ length: 40 }, () => unverified(settings)));
    const answers = await Promise.all(
      accounts.map(({ email, code }) =>
        callWithEnvFromOneClient(
          settings,
          "POST",
          "/auth/verify-email",
          { email, token: otherCode(code) },
          { "CF-Connecting-IP": "2001:db8:42:7::1" },
        ),
      ),
    );
    expect(tally(answers)).toEqual({ 401: 40 / BUDGET_SHARES, 429: 40 - 40 / BUDGET_SHARES });
    expect(await spent()).toBe(40 / BUDGET_SHARES);
    expect(await spentBy("2001:db8:42:7::/64")).toBe(40 / BUDGET_SHARES);
  });
});
