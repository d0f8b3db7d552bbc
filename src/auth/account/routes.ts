import { Hono } from "hono";
import { badJson, describeRoute, json, ref, text } from "../../lib/describe";
import { hashPassword, NO_PASSWORD } from "../../lib/password";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { requireAccessToken, unauthorized } from "../caller";
import { mailerOf, sendPasswordChangedNotice } from "../core/mails";
import { AuthMessage } from "../messages";
import { isActive } from "../core/factor";
import { bearer, bearerErrors, passwordChecked, passwordRules } from "../openapi";
import { ChangePasswordBody, DeleteAccountBody } from "../requests";
import type { MeJson } from "../shapes";
import { callerProfile } from "../core/accounts";
import { endSessions } from "../core/sessions";
import { reauthenticate } from "../core/step-up";
import { emailChange } from "./email-change";
import type { OwnedElsewhere } from "../core/accounts";
import { changePassword, deleteAccount } from "./store";

/**
 * The signed-in user's own account: read it, change its password or address (email-change.ts, and its
 * undo in email-revert.ts), and delete it (accountDeletion).
 */
export const accountRoutes = new Hono<AppEnv>()
  .get(
    "/me",
    describeRoute({
      ...bearer,
      summary: "Your account",
      responses: { "200": json("The caller's account", ref("Me")), ...bearerErrors },
    }),
    requireAccessToken,
    async (c) => {
      const profile = await callerProfile(c.var.db, c.var.caller, Date.now());
      if (!profile) return unauthorized(c);
      const { account: user, identities } = profile;
      const totp = isActive(user.factor);
      const me: MeJson = {
        id: user.id,
        email: user.email,
        verified: user.isVerified,
        created_at: new Date(user.createdAt).toISOString(),
        mfa: { totp, recovery_codes_remaining: totp ? user.recoveryCodes : 0 },
        identities: identities.map(({ provider, email, createdAt }) => ({
          provider,
          email,
          created_at: new Date(createdAt).toISOString(),
        })),
        has_password: user.password !== NO_PASSWORD,
      };
      return c.json(me, 200);
    },
  )

  .post(
    "/change-password",
    describeRoute({
      ...bearer,
      summary: "Change your password",
      description: "Needs the current password. Ends every other session and mails a notice.",
      requestExample: { current_password: "correct horse battery", new_password: "a new long password" },
      responses: {
        "200": text("Changed", AuthMessage.passwordChanged),
        "400": text(
          "Missing or malformed fields",
          AuthMessage.changePasswordRequired,
          AuthMessage.changePasswordStrings,
          ...passwordRules,
          ...badJson,
        ),
        ...passwordChecked,
      },
    }),
    requireAccessToken,
    jsonBody(ChangePasswordBody),
    async (c) => {
      const { current_password: currentPassword, new_password: newPassword, code: stepUpCode } = c.req.valid("json");
      const { config, log, caller } = c.var;
      const confirmed = await reauthenticate(c, {
        password: { value: currentPassword, missing: AuthMessage.changePasswordRequired },
        code: { value: stepUpCode },
      });
      if ("refused" in confirmed) return confirmed.refused;
      const hash = await hashPassword(newPassword, config.bcryptCost);
      const changed = await endSessions(
        c,
        (ending) => changePassword(ending, c.var.audit, caller, hash, Date.now()),
        (ok) => ok && caller.userId,
      );
      if (!changed) return unauthorized(c);
      log.info("password_changed", { userId: caller.userId });
      await sendPasswordChangedNotice(mailerOf(c.var), confirmed.account.email);
      return c.text(AuthMessage.passwordChanged, 200);
    },
  )

  .route("/", emailChange);

/**
 * DELETE /auth/account, which deletes what other areas keep for the account too (`ownedElsewhere`, handed in by
 * index.ts).
 */
export function accountDeletion(ownedElsewhere: OwnedElsewhere) {
  return new Hono<AppEnv>().delete(
    "/account",
    describeRoute({
      ...bearer,
      summary: "Delete your account",
      description: "Needs the password. Deletes the account, its sessions, codes and notes at once; every token dies.",
      requestExample: { password: "correct horse battery" },
      responses: {
        "204": { description: "Deleted" },
        "400": text(
          "Missing or malformed password",
          AuthMessage.passwordRequired,
          AuthMessage.passwordString,
          ...badJson,
        ),
        ...passwordChecked,
      },
    }),
    requireAccessToken,
    jsonBody(DeleteAccountBody),
    async (c) => {
      const { password, code: stepUpCode } = c.req.valid("json");
      const { log, caller } = c.var;
      const confirmed = await reauthenticate(c, {
        password: { value: password, missing: AuthMessage.passwordRequired },
        code: { value: stepUpCode },
      });
      if ("refused" in confirmed) return confirmed.refused;
      const deleted = await endSessions(
        c,
        (ending) => deleteAccount(ending, c.var.audit, caller, confirmed.account.email, ownedElsewhere, Date.now()),
        (ok) => ok && caller.userId,
      );
      if (!deleted) return unauthorized(c);
      log.info("account_deleted", { userId: caller.userId });
      return c.body(null, 204);
    },
  );
}
