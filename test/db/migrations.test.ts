import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { normalizeRecoveryCode } from "../../src/auth/core/recovery-codes";
import { sha256Hex } from "../../src/lib/crypto";
import { hashPassword } from "../../src/lib/password";
import { seal } from "../../src/lib/secret-box";
import { newTotpSecret, stepAt, totpAt } from "../../src/lib/totp";
import { callWithEnv, PASSWORD, randomEmail } from "../support/app";

/**
 * Migrations that move rows, run in steps on a database of their own (MIGRATION_DB): the rows are written
 * as the schema before the migration holds them, then the migration runs, then the app uses them.
 */

/** The migrations before the one named `tag`, and the rest. */
function splitAt(tag: string) {
  const at = env.TEST_MIGRATIONS.findIndex((migration) => migration.name.startsWith(tag));
  if (at === -1) throw new Error(`no migration ${tag}`);
  return [env.TEST_MIGRATIONS.slice(0, at), env.TEST_MIGRATIONS] as const;
}

describe("0014_sign_in_methods", () => {
  it("keeps an enrolled account's TOTP factor and recovery codes: the account signs in with a code, and with a recovery code, afterwards", async () => {
    const db = env.MIGRATION_DB;
    const [before, all] = splitAt("0014_");
    await applyD1Migrations(db, before);

    const email = randomEmail();
    const secret = newTotpSecret();
    const recoveryCode = "ABCDE-FGHJK-MNPQR-STVWX";
    const lastStep = stepAt(Date.now()) - 10;
    const { meta } = await db
      .prepare("INSERT INTO users (email, password, isVerified, createdAt) VALUES (?, ?, 1, ?)")
      .bind(email, await hashPassword(PASSWORD, 4), Date.now())
      .run();
    const userId = meta.last_row_id;
    const sealed = await seal(secret, env.JWT_SECRET_KEY);
    await db.batch([
      db
        .prepare(
          "INSERT INTO mfa_factors (user_id, sealed_secret, status, last_used_step, created_at) VALUES (?, ?, 'active', ?, ?)",
        )
        .bind(userId, sealed, lastStep, Date.now()),
      db
        .prepare("INSERT INTO mfa_recovery_codes (user_id, code_hash) VALUES (?, ?)")
        .bind(userId, await sha256Hex(normalizeRecoveryCode(recoveryCode))),
      db
        .prepare(
          "INSERT INTO mfa_challenges (token_hash, user_id, checked_hash, expires_at) VALUES ('in flight', ?, 'h', ?)",
        )
        .bind(userId, Date.now() + 60_000),
    ]);

    await applyD1Migrations(db, all);

    expect(
      await db
        .prepare("SELECT user_id, kind, sealed_secret, status, last_used_step FROM mfa_factors WHERE user_id = ?")
        .bind(userId)
        .first(),
    ).toEqual({
      user_id: userId,
      kind: "totp",
      sealed_secret: sealed,
      status: "active",
      last_used_step: lastStep,
    });
    expect(
      await db.prepare("SELECT count(*) AS n FROM mfa_recovery_codes WHERE user_id = ?").bind(userId).first("n"),
    ).toBe(1);
    // A challenge in flight is dropped: that sign-in starts again.
    expect(await db.prepare("SELECT count(*) AS n FROM mfa_challenges").first("n")).toBe(0);
    expect(await db.prepare("SELECT sign_in_epoch FROM users WHERE id = ?").bind(userId).first("sign_in_epoch")).toBe(
      0,
    );

    const signIn = async (proof: Record<string, string>) => {
      const first = await callWithEnv({ DB: db }, "POST", "/auth/login", { email, password: PASSWORD });
      const { mfa_token: mfaToken } = (await first.json()) as { mfa_token: string };
      return callWithEnv({ DB: db }, "POST", "/auth/mfa/verify", { mfa_token: mfaToken, ...proof });
    };
    expect((await signIn({ code: await totpAt(secret, stepAt(Date.now())) })).status).toBe(200);
    expect((await signIn({ recovery_code: recoveryCode })).status).toBe(200);
    expect(
      await db.prepare("SELECT amr FROM sessions WHERE user_id = ? ORDER BY created_at").bind(userId).all(),
    ).toMatchObject({
      results: [{ amr: "pwd otp mfa" }, { amr: "pwd rec mfa" }],
    });
  });
});

describe("0020_sign_in_detail and 0021_sign_in_detail_only", () => {
  it("keeps the provider of a social sign-in's session, and of one waiting for its second factor, in the detail", async () => {
    const db = env.SIGN_IN_DETAIL_DB;
    const [before, all] = splitAt("0020_");
    await applyD1Migrations(db, before);
    const { meta } = await db
      .prepare("INSERT INTO users (email, password, isVerified, createdAt) VALUES (?, '!', 1, ?)")
      .bind(randomEmail(), Date.now())
      .run();
    const userId = meta.last_row_id;
    const now = Date.now();
    const session =
      "INSERT INTO sessions (id, user_id, created_at, last_used_at, expires_at, amr, provider) VALUES (?, ?, ?, ?, ?, ?, ?)";
    await db.batch([
      db.prepare(session).bind("fed-session", userId, now, now, now + 60_000, "fed", "google"),
      db.prepare(session).bind("pwd-session", userId, now, now, now + 60_000, "pwd", null),
      db
        .prepare(
          "INSERT INTO mfa_challenges (token_hash, user_id, sign_in_epoch, amr, provider, expires_at) VALUES ('pending', ?, 0, 'fed', 'github', ?)",
        )
        .bind(userId, now + 60_000),
    ]);

    await applyD1Migrations(db, all);

    expect((await db.prepare("SELECT id, detail FROM sessions ORDER BY id").all()).results).toEqual([
      { id: "fed-session", detail: '{"provider":"google"}' },
      { id: "pwd-session", detail: null },
    ]);
    expect(await db.prepare("SELECT detail FROM mfa_challenges").first("detail")).toBe('{"provider":"github"}');
    const columns = await db.prepare("SELECT name FROM pragma_table_info('sessions') WHERE name = 'provider'").all();
    expect(columns.results).toEqual([]);
  });
});
