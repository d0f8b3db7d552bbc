import { and, eq, gt, lt, sql } from "drizzle-orm";
import { Hono, type Context } from "hono";
import { APP_NAME } from "../config";
import { mfaChallenges, mfaFactors, mfaRecoveryCodes, sessions, users } from "../db/schema";
import { badJson, describeRoute, json, ref, text } from "../lib/describe";
import { tooManyRequests } from "../lib/http";
import { open, seal } from "../lib/secret-box";
import { sha256Hex } from "../lib/crypto";
import { base32Encode, matchingStep, newTotpSecret, otpauthUri } from "../lib/totp";
import { MINUTE } from "../lib/units";
import { jsonBody } from "../lib/validation";
import type { AppEnv } from "../types";
import { requireAccessToken, type CallerEnv } from "./caller";
import { accountErrors, accountsTag, bearer } from "./docs";
import { LOGIN_FAILURES_BEFORE_LOCK, loginCounter } from "./limits";
import { mailerOf, sendMfaDisabledNotice, sendMfaEnabledNotice, sendRecoveryCodeUsedNotice } from "./mails";
import { AuthMessage } from "./messages";
import { reauthenticate } from "./reauth";
import { DisableTotpBody, EnrolTotpBody, MfaVerifyBody, TotpCodeBody } from "./schemas";
import { acceptTotp, newRecoveryCodes, RECOVERY_CODE_COUNT, recoveryCodeHash, useRecoveryCode } from "./second-factor";
import { MFA_TOKEN_TTL_MS, MFA_TOKEN_TRIES, openSession } from "./gate";

/**
 * Two-factor authentication with TOTP (RFC 6238) and recovery codes. See docs/mfa.md.
 *
 * One gate: every way into a session passes `passFirstFactor` (today the password login; a future passkey
 * or e-mail-code login must too), which opens the session only for an account without an active factor,
 * and otherwise answers a challenge (`mfa_token`) that only POST /auth/mfa/verify turns into a session.
 * The reset flow and an e-mail change create no session and leave the factor as it is; a refresh only
 * continues a session that passed the gate.
 */

/** The answer that shows a new set of recovery codes, once. */
const recoveryCodesAnswer = (description: string) =>
  json(description, {
    type: "object",
    required: ["recovery_codes"],
    properties: { recovery_codes: { type: "array", items: { type: "string" }, minItems: RECOVERY_CODE_COUNT, maxItems: RECOVERY_CODE_COUNT } },
  });
const wrongCode = text("Wrong code, or an invalid access token", AuthMessage.invalidMfaCode, AuthMessage.invalidAccessToken);

const codeRules = `6 digits, 30-second steps, SHA-1; a code of the step before or after the current one is accepted (clock drift), and no step is accepted twice`;

export const mfa = new Hono<AppEnv>()
  .post(
    "/mfa/totp",
    describeRoute({
      ...bearer,
      summary: "Start two-factor enrolment (TOTP)",
      description:
        "Needs the password (counted on the session like the other password checks). Answers the secret to put in an authenticator app, as text and as an " +
        "`otpauth://` URI (for a QR code). The factor is pending until confirmed; a new enrolment replaces a pending one.",
      requestExample: { password: "correct horse battery" },
      responses: {
        "200": json("The secret", {
          type: "object",
          required: ["secret", "otpauth_uri"],
          properties: { secret: { type: "string", description: "Base32, 160 bits" }, otpauth_uri: { type: "string" } },
        }),
        "400": text("Missing or malformed password", AuthMessage.passwordRequired, AuthMessage.passwordString, ...badJson),
        "401": text("Wrong password, or an invalid access token", AuthMessage.wrongPassword, AuthMessage.invalidAccessToken),
        "409": text("Two-factor authentication is already on", AuthMessage.mfaAlreadyActive),
        ...accountErrors,
      },
    }),
    requireAccessToken,
    jsonBody(EnrolTotpBody),
    async (c) => {
      const { password } = c.req.valid("json");
      const { config, db } = c.var;
      const confirmed = await reauthenticate(c, { password });
      if ("refused" in confirmed) return confirmed.refused;
      const secret = newTotpSecret();
      const sealed = await seal(secret, config.mfaKeys[0]!);
      // Replaces a pending factor, never an active one: the upsert's condition decides, not a read.
      const [stored] = await db
        .insert(mfaFactors)
        .values({ userId: confirmed.account.id, sealedSecret: sealed, status: "pending", createdAt: Date.now() })
        .onConflictDoUpdate({
          target: mfaFactors.userId,
          set: { sealedSecret: sealed, lastUsedStep: 0, createdAt: Date.now() },
          setWhere: eq(mfaFactors.status, "pending"),
        })
        .returning({ userId: mfaFactors.userId });
      if (!stored) return c.text(AuthMessage.mfaAlreadyActive, 409);
      return c.json({ secret: base32Encode(secret), otpauth_uri: otpauthUri(APP_NAME, confirmed.account.email, secret) }, 200);
    },
  )

  .post(
    "/mfa/totp/confirm",
    describeRoute({
      ...bearer,
      summary: "Confirm two-factor enrolment",
      description: `With a current code of the app (${codeRules}): the factor is on, ${RECOVERY_CODE_COUNT} recovery codes are answered (shown once), and a notice is mailed.`,
      requestExample: { code: "123456" },
      responses: {
        "200": recoveryCodesAnswer("On"),
        "400": text("Missing or malformed code, or no enrolment pending", AuthMessage.codeRequired, AuthMessage.codeString, AuthMessage.noPendingFactor, ...badJson),
        "401": wrongCode,
        ...accountErrors,
      },
    }),
    requireAccessToken,
    jsonBody(TotpCodeBody),
    async (c) => {
      const { code } = c.req.valid("json");
      const { log } = c.var;
      const confirmed = await reauthenticate(c, {});
      if ("refused" in confirmed) return confirmed.refused;
      const { account } = confirmed;
      if (account.factorStatus !== "pending") return c.text(AuthMessage.noPendingFactor, 400);
      // The pending factor becomes active with the confirming code's step claimed (never usable again).
      const activated = await activate(c, account.id, account.sealedSecret!, code);
      if (!activated) return c.text(AuthMessage.invalidMfaCode, 401);
      const codes = newRecoveryCodes();
      await replaceRecoveryCodes(c, account.id, codes);
      log.info("mfa_enabled", { userId: account.id });
      await sendMfaEnabledNotice(mailerOf(c.var), account.email);
      return c.json({ recovery_codes: codes }, 200);
    },
  )

  .post(
    "/mfa/verify",
    describeRoute({
      tags: accountsTag,
      summary: "Second step of a login with two-factor authentication",
      description:
        `The \`mfa_token\` of the login and a current code (${codeRules}), or one of the recovery codes. Answers the tokens exactly like a login; ` +
        `the session is created then. An \`mfa_token\` allows ${MFA_TOKEN_TRIES} tries and lives ${MFA_TOKEN_TTL_MS / MINUTE} minutes or until its first success. ` +
        `Wrong codes count toward the address's login lock (${LOGIN_FAILURES_BEFORE_LOCK} attempts, password or code, lock it).`,
      requestExample: { mfa_token: "…", code: "123456" },
      responses: {
        "200": json("Logged in", ref("Login")),
        "400": text("Missing or malformed fields", AuthMessage.mfaVerifyFields, AuthMessage.mfaVerifyStrings, ...badJson),
        "401": text("Wrong code, or an unknown, used, expired or exhausted mfa_token", AuthMessage.invalidMfaCode, AuthMessage.invalidMfaToken),
        ...accountErrors,
        "429": text("The address is locked (10 failed attempts)", AuthMessage.loginLocked),
      },
    }),
    jsonBody(MfaVerifyBody),
    async (c) => {
      const { mfa_token: token, code, recovery_code: recoveryCode } = c.req.valid("json");
      const { config, db, log } = c.var;
      const now = Date.now();
      const tokenHash = await sha256Hex(token);
      const live = and(eq(mfaChallenges.tokenHash, tokenHash), eq(mfaChallenges.used, false), gt(mfaChallenges.expiresAt, now));
      // One try of the token claimed before the code is looked at.
      const [tried] = await db
        .update(mfaChallenges)
        .set({ tries: sql`${mfaChallenges.tries} + 1` })
        .where(and(live, lt(mfaChallenges.tries, MFA_TOKEN_TRIES)))
        .returning({ userId: mfaChallenges.userId, checkedHash: mfaChallenges.checkedHash, deviceId: mfaChallenges.deviceId });
      if (!tried) return c.text(AuthMessage.invalidMfaToken, 401);
      const [account] = await db
        .select({ email: users.email, sealedSecret: mfaFactors.sealedSecret })
        .from(users)
        .innerJoin(mfaFactors, and(eq(mfaFactors.userId, users.id), eq(mfaFactors.status, "active")))
        .where(eq(users.id, tried.userId));
      if (!account) return c.text(AuthMessage.invalidMfaToken, 401);
      // A second-factor try is a login attempt of the address: claimed before the code is checked.
      const counter = loginCounter(db, account.email, tried.deviceId ?? undefined, now);
      const [[claim], [lock]] = await db.batch([counter.claim, counter.lock]);
      if (!claim) return tooManyRequests(c, (lock?.lockedUntil ?? now + counter.lockMs) - now, AuthMessage.loginLocked);

      const check =
        code !== undefined
          ? { ok: await acceptTotp(db, config, tried.userId, account.sealedSecret, code, now) }
          : await recoveryCheck(c, tried.userId, account.email, recoveryCode!);
      if (!check.ok) {
        log.warn("mfa_verify_failed", { userId: tried.userId });
        return c.text(AuthMessage.invalidMfaCode, 401);
      }
      // The token's first success uses it up; a concurrent one that also passed its check gets nothing.
      const [used] = await db.update(mfaChallenges).set({ used: true }).where(live).returning({ userId: mfaChallenges.userId });
      if (!used) return c.text(AuthMessage.invalidMfaToken, 401);
      return openSession(c, { id: tried.userId, email: account.email, checkedHash: tried.checkedHash }, tried.deviceId ?? undefined, [
        counter.release(claim.lockedUntil),
      ]);
    },
  )

  .post(
    "/mfa/recovery-codes",
    describeRoute({
      ...bearer,
      summary: "New recovery codes",
      description: `With a current code of the app: ${RECOVERY_CODE_COUNT} new recovery codes (shown once); the old ones die.`,
      requestExample: { code: "123456" },
      responses: {
        "200": recoveryCodesAnswer("The new codes"),
        "400": text("Missing or malformed code", AuthMessage.codeRequired, AuthMessage.codeString, AuthMessage.mfaNotActive, ...badJson),
        "401": wrongCode,
        ...accountErrors,
      },
    }),
    requireAccessToken,
    jsonBody(TotpCodeBody),
    async (c) => {
      const { code } = c.req.valid("json");
      const check = await reauthenticate(c, { code: { value: code } });
      if ("refused" in check) return check.refused;
      if (check.account.factorStatus !== "active") return c.text(AuthMessage.mfaNotActive, 400);
      const codes = newRecoveryCodes();
      await replaceRecoveryCodes(c, check.account.id, codes);
      c.var.log.info("mfa_recovery_codes_replaced", { userId: check.account.id });
      return c.json({ recovery_codes: codes }, 200);
    },
  )

  .delete(
    "/mfa/totp",
    describeRoute({
      ...bearer,
      summary: "Turn two-factor authentication off",
      description: "Needs the password and a current code (or a recovery code). The factor and its recovery codes go, every other session ends, a notice is mailed.",
      requestExample: { password: "correct horse battery", code: "123456" },
      responses: {
        "204": { description: "Off" },
        "400": text("Missing or malformed fields, or two-factor authentication is not on", AuthMessage.passwordRequired, AuthMessage.passwordString, AuthMessage.codeRequired, AuthMessage.codeString, AuthMessage.mfaNotActive, ...badJson),
        "401": text("Wrong password or code, or an invalid access token", AuthMessage.wrongPassword, AuthMessage.invalidMfaCode, AuthMessage.invalidAccessToken),
        ...accountErrors,
      },
    }),
    requireAccessToken,
    jsonBody(DisableTotpBody),
    async (c) => {
      const { password, code } = c.req.valid("json");
      const { db, log } = c.var;
      const caller = c.var.caller;
      const check = await reauthenticate(c, { password, code: { value: code } });
      if ("refused" in check) return check.refused;
      if (check.account.factorStatus !== "active") return c.text(AuthMessage.mfaNotActive, 400);
      await db.batch([
        db.delete(mfaFactors).where(eq(mfaFactors.userId, caller.userId)),
        db.delete(mfaRecoveryCodes).where(eq(mfaRecoveryCodes.userId, caller.userId)),
        db.delete(mfaChallenges).where(eq(mfaChallenges.userId, caller.userId)),
        db.delete(sessions).where(and(eq(sessions.userId, caller.userId), sql`${sessions.id} <> ${caller.sessionId}`)),
      ]);
      log.info("mfa_disabled", { userId: caller.userId });
      await sendMfaDisabledNotice(mailerOf(c.var), check.account.email);
      return c.body(null, 204);
    },
  );

/** Makes the pending factor active, claiming the step of `code` in the same conditional UPDATE. */
async function activate(c: Context<CallerEnv>, userId: number, sealedSecret: string, code: string): Promise<boolean> {
  const { db, config } = c.var;
  const secret = await open(sealedSecret, config.mfaKeys);
  const step = secret && (await matchingStep(secret, code.trim(), Date.now()));
  if (step === undefined || !secret) return false;
  const [active] = await db
    .update(mfaFactors)
    .set({ status: "active", lastUsedStep: step })
    .where(and(eq(mfaFactors.userId, userId), eq(mfaFactors.status, "pending"), eq(mfaFactors.sealedSecret, sealedSecret), lt(mfaFactors.lastUsedStep, step)))
    .returning({ userId: mfaFactors.userId });
  return active !== undefined;
}

/** Stores a new set of recovery codes (as hashes), the old set gone, in one transaction. */
async function replaceRecoveryCodes(c: Context<CallerEnv>, userId: number, codes: string[]) {
  const { db } = c.var;
  const hashes = await Promise.all(codes.map(recoveryCodeHash));
  await db.batch([
    db.delete(mfaRecoveryCodes).where(eq(mfaRecoveryCodes.userId, userId)),
    db.insert(mfaRecoveryCodes).values(hashes.map((codeHash) => ({ userId, codeHash }))),
  ]);
}

/** A recovery code at login: used up, and the owner told how many are left. */
async function recoveryCheck(c: Context<AppEnv>, userId: number, email: string, typed: string): Promise<{ ok: boolean }> {
  const left = await useRecoveryCode(c.var.db, userId, typed);
  if (left === undefined) return { ok: false };
  await sendRecoveryCodeUsedNotice(mailerOf(c.var), email, left);
  return { ok: true };
}
