import { Hono } from "hono";
import { changedRows } from "../../audit/events";
import { APP_NAME } from "../../config";
import { badJson, describeRoute, json, text } from "../../lib/describe";
import { seal } from "../../lib/secret-box";
import { TOTP_SECRET_BYTES, base32Encode, newTotpSecret, otpauthUri } from "../../lib/totp";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { requireAccessToken } from "../caller";
import { mailerOf, sendMfaDisabledNotice, sendMfaEnabledNotice } from "../core/mails";
import { AuthMessage } from "../messages";
import { accountErrors, bearer } from "../openapi";
import { DisableTotpBody, EnrolTotpBody, TotpCodeBody } from "../requests";
import { reauthenticate } from "../core/step-up";
import { endSessions } from "../core/sessions";
import { dropChallenges } from "../core/pending";
import { acceptCode, enrolPending, isActive, removeFactors } from "../core/factor";
import { newRecoveryCodes, replaceRecoveryCodes } from "../core/recovery-codes";
import { CODE_RULES, mfaVerify } from "./verify";
import { RECENT_SIGN_IN_MS, RECOVERY_CODE_COUNT } from "../policy";
import { duration } from "../../lib/units";

/** The answer that shows a new set of recovery codes, once. */
const recoveryCodesAnswer = (description: string) =>
  json(description, {
    type: "object",
    required: ["recovery_codes"],
    properties: {
      recovery_codes: {
        type: "array",
        items: { type: "string" },
        minItems: RECOVERY_CODE_COUNT,
        maxItems: RECOVERY_CODE_COUNT,
      },
    },
  });
const wrongCode = text(
  "Wrong code, or an invalid access token",
  AuthMessage.invalidMfaCode,
  AuthMessage.invalidAccessToken,
);

/**
 * Two-factor authentication with TOTP (RFC 6238) and recovery codes: turning it on and off, and the login's second
 * step. See docs/mfa.md.
 */
export const mfaRoutes = new Hono<AppEnv>()
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
          properties: {
            secret: { type: "string", description: `Base32, ${TOTP_SECRET_BYTES * 8} bits` },
            otpauth_uri: { type: "string" },
          },
        }),
        "400": text(
          "Missing or malformed password",
          AuthMessage.passwordRequired,
          AuthMessage.passwordString,
          ...badJson,
        ),
        "401": text(
          `Wrong password, or an invalid access token; for an account without a password, a session opened more than ${duration(RECENT_SIGN_IN_MS)} ago`,
          AuthMessage.wrongPassword,
          AuthMessage.invalidAccessToken,
          AuthMessage.signInAgain,
        ),
        "409": text("Two-factor authentication is already on", AuthMessage.mfaAlreadyActive),
        ...accountErrors,
      },
    }),
    requireAccessToken,
    jsonBody(EnrolTotpBody),
    async (c) => {
      const { password } = c.req.valid("json");
      const confirmed = await reauthenticate(c, {
        password: { value: password, missing: AuthMessage.passwordRequired },
      });
      if ("refused" in confirmed) return confirmed.refused;
      const secret = newTotpSecret();
      if (
        !(await enrolPending(c.var.db, confirmed.account.id, await seal(secret, c.var.config.mfaKeys[0]!), Date.now()))
      ) {
        return c.text(AuthMessage.mfaAlreadyActive, 409);
      }
      return c.json(
        { secret: base32Encode(secret), otpauth_uri: otpauthUri(APP_NAME, confirmed.account.email, secret) },
        200,
      );
    },
  )

  .post(
    "/mfa/totp/confirm",
    describeRoute({
      ...bearer,
      summary: "Confirm two-factor enrolment",
      description:
        `With a current code of the app (${CODE_RULES}): the factor is on, ${RECOVERY_CODE_COUNT} recovery codes are answered (shown once), ` +
        "every other session of the account ends (they never passed the factor), and a notice is mailed.",
      requestExample: { code: "123456" },
      responses: {
        "200": recoveryCodesAnswer("On"),
        "400": text(
          "Missing or malformed code, or no enrolment pending",
          AuthMessage.codeRequired,
          AuthMessage.codeString,
          AuthMessage.noPendingFactor,
          ...badJson,
        ),
        "401": wrongCode,
        ...accountErrors,
      },
    }),
    requireAccessToken,
    jsonBody(TotpCodeBody),
    async (c) => {
      const { code } = c.req.valid("json");
      const { config, db, log } = c.var;
      const confirmed = await reauthenticate(c, {});
      if ("refused" in confirmed) return confirmed.refused;
      const { account } = confirmed;
      if (account.factor?.status !== "pending") return c.text(AuthMessage.noPendingFactor, 400);
      // The pending factor becomes active with the confirming code's step claimed (never usable again).
      const enabled = c.var.audit.record(
        { type: "mfa.enabled", userId: account.id, data: { kind: "totp" } },
        changedRows(),
      );
      const outcome = await acceptCode(db, config, account.id, account.factor, code, Date.now(), enabled);
      if (outcome !== "accepted")
        return c.text(outcome === "reused" ? AuthMessage.mfaCodeReused : AuthMessage.invalidMfaCode, 401);
      const codes = newRecoveryCodes();
      // Sessions opened before the factor was on never passed it: they end (the caller's goes on).
      await endSessions(
        c,
        (ending) => replaceRecoveryCodes(db, account.id, codes, [ending.others(c.var.caller)]),
        () => account.id,
      );
      log.info("mfa_enabled", { userId: account.id });
      await sendMfaEnabledNotice(mailerOf(c.var), account.email);
      return c.json({ recovery_codes: codes }, 200);
    },
  )

  .route("/", mfaVerify)

  .post(
    "/mfa/recovery-codes",
    describeRoute({
      ...bearer,
      summary: "New recovery codes",
      description: `With a current code of the app, or one of the recovery codes (the phone is lost): ${RECOVERY_CODE_COUNT} new recovery codes (shown once); the old ones die.`,
      requestExample: { code: "123456" },
      responses: {
        "200": recoveryCodesAnswer("The new codes"),
        "400": text(
          "Missing or malformed code",
          AuthMessage.codeRequired,
          AuthMessage.codeString,
          AuthMessage.mfaNotActive,
          ...badJson,
        ),
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
      if (!isActive(check.account.factor)) return c.text(AuthMessage.mfaNotActive, 400);
      const codes = newRecoveryCodes();
      await replaceRecoveryCodes(c.var.db, check.account.id, codes);
      c.var.log.info("mfa_recovery_codes_replaced", { userId: check.account.id });
      return c.json({ recovery_codes: codes }, 200);
    },
  )

  .delete(
    "/mfa/totp",
    describeRoute({
      ...bearer,
      summary: "Turn two-factor authentication off",
      description:
        "Needs the password and a current code (or a recovery code). The factor and its recovery codes go, every other session ends, a notice is mailed.",
      requestExample: { password: "correct horse battery", code: "123456" },
      responses: {
        "204": { description: "Off" },
        "400": text(
          "Missing or malformed fields, or two-factor authentication is not on",
          AuthMessage.passwordRequired,
          AuthMessage.passwordString,
          AuthMessage.codeRequired,
          AuthMessage.codeString,
          AuthMessage.mfaNotActive,
          ...badJson,
        ),
        "401": text(
          "Wrong password or code, or an invalid access token",
          AuthMessage.wrongPassword,
          AuthMessage.invalidMfaCode,
          AuthMessage.invalidAccessToken,
        ),
        ...accountErrors,
      },
    }),
    requireAccessToken,
    jsonBody(DisableTotpBody),
    async (c) => {
      const { password, code } = c.req.valid("json");
      const { db, log, caller } = c.var;
      const check = await reauthenticate(c, {
        password: { value: password, missing: AuthMessage.passwordRequired },
        code: { value: code },
      });
      if ("refused" in check) return check.refused;
      if (!isActive(check.account.factor)) return c.text(AuthMessage.mfaNotActive, 400);
      const [factors, recoveryCodes] = removeFactors(db, caller.userId);
      const disabled = c.var.audit.record(
        { type: "mfa.disabled", userId: caller.userId, data: { kind: "totp" } },
        changedRows(),
      );
      await endSessions(
        c,
        (ending) =>
          db.batch([factors, ...disabled, recoveryCodes, dropChallenges(db, caller.userId), ending.others(caller)]),
        () => caller.userId,
      );
      log.info("mfa_disabled", { userId: caller.userId });
      await sendMfaDisabledNotice(mailerOf(c.var), check.account.email);
      return c.body(null, 204);
    },
  );
