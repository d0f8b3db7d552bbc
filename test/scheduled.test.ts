/** The hourly cron (src/scheduled.ts), fired through the runtime as Cloudflare fires it. */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../src/index";
import { DAY, HOUR, MINUTE } from "../src/lib/units";
import { eventsOf, eventsOfDeleted } from "./support/audit";
import {
  account,
  logIn,
  quietRegister,
  resetCode,
  sessionIdOf,
  setUser,
  storedCode,
  storedSession,
  type StoredSession,
  storedUser,
  verifiedAccount,
} from "./support/accounts";
import { count, fireCron, randomEmail, TEXT, textOf } from "./support/app";
import { Contract } from "./contract";

async function setSession(id: string, columns: Partial<StoredSession>): Promise<void> {
  const names = Object.keys(columns) as Array<keyof StoredSession>;
  await env.DB.prepare(`UPDATE sessions SET ${names.map((name) => `${name} = ?`).join(", ")} WHERE id = ?`)
    .bind(...names.map((name) => columns[name]), id)
    .run();
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("scheduled clean-up", () => {
  it("deletes expired sessions when the cron trigger fires, and keeps live ones", async () => {
    const email = await verifiedAccount();
    const expired = await logIn(email);
    const live = await logIn(email);
    await setSession(sessionIdOf(expired.token), { expires_at: Date.now() - 1 });

    await fireCron();
    expect(await storedSession(sessionIdOf(expired.token))).toBeNull();
    expect(await storedSession(sessionIdOf(live.token))).not.toBeNull();
  });
});

describe("what else runs out", () => {
  it("deletes expired second-factor challenges and revert tokens, and named windows older than a day; keeps the live ones", async () => {
    const userId = (await storedUser(await account()))!.id;
    const now = Date.now();
    const tag = crypto.randomUUID();
    await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO mfa_challenges (token_hash, user_id, sign_in_epoch, amr, expires_at) VALUES (?, ?, 0, 'pwd', ?), (?, ?, 0, 'pwd', ?)",
      ).bind(`gone-${tag}`, userId, now - 1, `live-${tag}`, userId, now + MINUTE),
      env.DB.prepare(
        "INSERT INTO email_change_reverts (token_hash, user_id, old_email, expires_at) VALUES (?, ?, 'a@example.com', ?), (?, ?, 'a@example.com', ?)",
      ).bind(`gone-${tag}`, userId, now - 1, `live-${tag}`, userId, now + DAY),
      env.DB.prepare("INSERT INTO deployment_windows (name, window_start, count) VALUES (?, ?, 1), (?, ?, 1)").bind(
        `gone-${tag}`,
        now - 2 * DAY,
        `live-${tag}`,
        now - MINUTE,
      ),
    ]);

    await fireCron();
    for (const table of ["mfa_challenges", "email_change_reverts"]) {
      expect(await count(`SELECT count(*) AS n FROM ${table} WHERE token_hash = ?`, `gone-${tag}`)).toBe(0);
      expect(await count(`SELECT count(*) AS n FROM ${table} WHERE token_hash = ?`, `live-${tag}`)).toBe(1);
    }
    expect(await count("SELECT count(*) AS n FROM deployment_windows WHERE name = ?", `gone-${tag}`)).toBe(0);
    expect(await count("SELECT count(*) AS n FROM deployment_windows WHERE name = ?", `live-${tag}`)).toBe(1);
  });
});

describe("unverified accounts expire", () => {
  it("deletes an account still unverified 7 days after registering, with its codes; the address is free again", async () => {
    const expired = randomEmail("expired");
    await quietRegister(expired);
    await resetCode(expired); // a code of another purpose too
    const expiredId = (await storedUser(expired))!.id;
    await setUser(expired, { createdAt: Date.now() - 7 * DAY - MINUTE });

    const fresh = randomEmail("fresh");
    await quietRegister(fresh);
    await setUser(fresh, { createdAt: Date.now() - 6 * DAY });
    const verifiedOld = await account();
    await setUser(verifiedOld, { createdAt: Date.now() - 30 * DAY });

    await fireCron();
    expect(await storedUser(expired)).toBeNull();
    // Accounts registered after it hold higher ids, so none can have taken its id yet.
    expect(await count("SELECT count(*) AS n FROM one_time_codes WHERE user_id = ?", expiredId)).toBe(0);
    expect(await storedUser(fresh)).not.toBeNull();
    expect(await storedCode(fresh)).not.toBeNull();
    expect(await storedUser(verifiedOld)).not.toBeNull();

    expect(await textOf(await quietRegister(expired))).toEqual({
      status: 201,
      type: TEXT,
      body: Contract.userCreated,
    });
  });

  it("records each deletion as the system's user.deleted, closed with the account, and nothing for the others", async () => {
    const expired = randomEmail("expired");
    await quietRegister(expired);
    const expiredId = (await storedUser(expired))!.id;
    await setUser(expired, { createdAt: Date.now() - 7 * DAY - MINUTE });
    const kept = await account();
    await setUser(kept, { createdAt: Date.now() - 30 * DAY });

    await fireCron();
    expect(await eventsOfDeleted(expiredId)).toEqual([
      expect.objectContaining({ type: "user.registered", closed: 1 }),
      expect.objectContaining({
        id: expect.stringMatching(/^evt_[0-9a-f]{32}$/),
        type: "user.deleted",
        actor: "system",
        ip: null,
        user_agent: null,
        data: { email: expired, reason: "unverified" },
        closed: 1,
      }),
    ]);
    expect(await eventsOf((await storedUser(kept))!.id, "user.deleted")).toEqual([]);
  });
});

describe("the audit log's retention", () => {
  it("removes events older than AUDIT_RETENTION_DAYS with their webhook deliveries, and keeps the newer ones", async () => {
    const email = await account();
    const id = (await storedUser(email))!.id;
    await logIn(email);
    const [old, recent] = await eventsOf(id);
    await env.DB.prepare("UPDATE audit_events SET at = ? WHERE id = ?")
      .bind(Date.now() - 90 * DAY - MINUTE, old!.id)
      .run();
    await env.DB.prepare("UPDATE audit_events SET at = ? WHERE id = ?")
      .bind(Date.now() - 89 * DAY, recent!.id)
      .run();
    await env.DB.prepare(
      "INSERT INTO webhook_outbox (event_id, state, attempts, window_start, next_attempt_at, failed_at) VALUES (?, 'failed', 9, 0, 0, 0)",
    )
      .bind(old!.id)
      .run();
    await env.DB.prepare(
      "INSERT INTO audit_failed_sign_in_windows (user_id, window_start, failures, last_event_id) VALUES (?, ?, 3, 'x')",
    )
      .bind(id, Date.now() - 2 * HOUR)
      .run();

    await fireCron();
    expect((await eventsOf(id)).map((event) => event.id)).not.toContain(old!.id);
    expect((await eventsOf(id)).map((event) => event.id)).toContain(recent!.id);
    expect(await count("SELECT count(*) AS n FROM webhook_outbox WHERE event_id = ?", old!.id)).toBe(0);
    expect(await count("SELECT count(*) AS n FROM audit_failed_sign_in_windows WHERE user_id = ?", id)).toBe(0);
  });

  it("keeps them as long as AUDIT_RETENTION_DAYS says", async () => {
    const email = await account();
    const id = (await storedUser(email))!.id;
    const [event] = await eventsOf(id);
    await env.DB.prepare("UPDATE audit_events SET at = ? WHERE id = ?")
      .bind(Date.now() - 91 * DAY, event!.id)
      .run();
    const controller: ScheduledController = { scheduledTime: Date.now(), cron: "17 * * * *", noRetry() {} };
    await worker.scheduled(controller, { ...env, AUDIT_RETENTION_DAYS: "365" });
    expect((await eventsOf(id)).map((kept) => kept.id)).toContain(event!.id);
    await worker.scheduled(controller, { ...env, AUDIT_RETENTION_DAYS: "30" });
    expect((await eventsOf(id)).map((kept) => kept.id)).not.toContain(event!.id);
  });
});

describe("social sign-in's leftovers", () => {
  it("deletes states and login codes past their lifetime, and keeps the live ones", async () => {
    const userId = (await storedUser(await account()))!.id;
    const now = Date.now();
    const tag = crypto.randomUUID();
    await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO oauth_states (state_hash, provider, redirect_uri, code_challenge, code_verifier, nonce, expires_at) VALUES (?, 'google', 'x', 'c', 'v', 'n', ?), (?, 'google', 'x', 'c', 'v', 'n', ?)",
      ).bind(`gone-${tag}`, now - 1, `live-${tag}`, now + MINUTE),
      env.DB.prepare(
        "INSERT INTO oauth_login_codes (code_hash, user_id, sign_in_epoch, provider, code_challenge, expires_at) VALUES (?, ?, 0, 'google', 'c', ?), (?, ?, 0, 'google', 'c', ?)",
      ).bind(`gone-${tag}`, userId, now - 1, `live-${tag}`, userId, now + MINUTE),
    ]);
    await fireCron();
    for (const table of ["oauth_states", "oauth_login_codes"]) {
      const column = table === "oauth_states" ? "state_hash" : "code_hash";
      expect(await count(`SELECT count(*) AS n FROM ${table} WHERE ${column} = ?`, `gone-${tag}`)).toBe(0);
      expect(await count(`SELECT count(*) AS n FROM ${table} WHERE ${column} = ?`, `live-${tag}`)).toBe(1);
    }
  });
});
