/** The hourly cron (src/scheduled.ts), fired through the runtime as Cloudflare fires it. */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DAY, MINUTE } from "../src/lib/units";
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
