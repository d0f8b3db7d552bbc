import { Hono } from "hono";
import { sha256Hex } from "../../lib/crypto";
import { badJson, describeRoute, text } from "../../lib/describe";
import { base64url } from "../../lib/encoding";
import { maskEmail } from "../../lib/log";
import { DAY, HOUR } from "../../lib/units";
import { inlinePagePolicy } from "../../lib/page";
import { CONTENT_SECURITY_POLICY, DOCUMENT_SECURITY_HEADERS } from "../../lib/security-headers";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { requestMailer } from "../core/mails";
import { sendEmailChangeRevertedNotice, sendEmailChangeUndoneNotice } from "../core/address-mails";
import { linkedProviders } from "../core/accounts";
import { AuthMessage } from "../messages";
import { REVERT_PAGE_HTML } from "./revert-page";
import { accountErrors, accountsTag } from "../openapi";
import { RevertEmailChangeBody } from "../requests";
import { endSessions } from "../core/sessions";
import { revertEmailChange } from "./revert-store";
import { EMAIL_CHANGE_LOOKBACK_MS, EMAIL_CHANGE_REVERT_PROVEN_TTL_MS, EMAIL_CHANGE_REVERT_TTL_MS } from "../policy";

/**
 * Undoing an e-mail change. A change is confirmed by the new mailbox alone, so a phished password would
 * be a permanent takeover; the notice to the old address therefore carries a revert token, valid
 * EMAIL_CHANGE_REVERT_TTL_MS, that puts the account back as it was before whoever made the change could touch
 * it (docs/threat-model/email-change.md, revert-store.ts): the old address, every session ended, the password
 * cleared (the phisher knows it), and what they may have added removed. The owner then sets a new password with
 * forgot-password, through the mailbox they just got back. While the token lives the old address stays
 * reserved for the account. The token is 128 random bits (nothing to guess within the per-client limit),
 * stored as its SHA-256 only, and used up by the one batch that reverts.
 */

/**
 * The link of a notice that undoes the change: APP_URL's page when set, else the API's own (below), on the request's
 * origin.
 */
export function undoLink(appUrl: string | undefined, requestUrl: string, token: string): string {
  const base = appUrl ?? `${new URL(requestUrl).origin}/auth`;
  return `${base}/revert-email-change?${new URLSearchParams({ token }).toString()}`;
}

/** A new revert token, and what is stored of it. */
export async function newRevertToken(): Promise<{ token: string; tokenHash: string }> {
  const token = base64url(crypto.getRandomValues(new Uint8Array(16)));
  return { token, tokenHash: await sha256Hex(token) };
}

export const emailRevert = new Hono<AppEnv>()
  .get(
    "/revert-email-change",
    describeRoute({
      tags: accountsTag,
      summary: "The page the undo link of a notice opens",
      description:
        "An HTML page with one button that sends the link's `token` to POST /auth/revert-email-change and shows the answer. Opening it changes " +
        "nothing (mail scanners open links). Used when APP_URL is not set.",
      parameters: [
        {
          name: "token",
          in: "query",
          required: false,
          description: "The revert token of the notice",
          schema: { type: "string" },
        },
      ],
      responses: { "200": { description: "HTML page", content: { "text/html": { schema: { type: "string" } } } } },
    }),
    async (c) =>
      c.html(REVERT_PAGE_HTML, 200, {
        ...DOCUMENT_SECURITY_HEADERS,
        [CONTENT_SECURITY_POLICY]: await inlinePagePolicy(REVERT_PAGE_HTML),
      }),
  )
  .post(
    "/revert-email-change",
    describeRoute({
      tags: accountsTag,
      summary: "Undo an e-mail change",
      description:
        `No bearer token: the revert token from the notice mailed to the old address (valid ${EMAIL_CHANGE_REVERT_TTL_MS / DAY} days) is the proof. ` +
        "Puts the old address back, ends every session, clears the password (set a new one with forgot-password) and removes every passkey, second " +
        `factor and linked provider added from ${EMAIL_CHANGE_LOOKBACK_MS / HOUR} hours before the change on or by the session that made it ` +
        "(docs/threat-model/email-change.md); mails both addresses what it removed. Tokens of earlier changes stay good; this one's and later ones' " +
        `are used up. The token is good for ${EMAIL_CHANGE_REVERT_PROVEN_TTL_MS / HOUR} hours at most once the account has signed in, since the change, ` +
        "with a passkey or TOTP it had before.",
      requestExample: { token: "q3Jx8v0bYV3oQ1m2k5nR7w" },
      responses: {
        "200": text("Undone", AuthMessage.emailChangeReverted),
        "400": text("Missing or malformed token", AuthMessage.tokenRequired, AuthMessage.tokenString, ...badJson),
        "401": text("Unknown, used or expired token", AuthMessage.invalidRevertToken),
        "409": text("Another account has registered the old address meanwhile", AuthMessage.revertAddressTaken),
        ...accountErrors,
      },
    }),
    jsonBody(RevertEmailChangeBody),
    async (c) => {
      const { token } = c.req.valid("json");
      const tokenHash = await sha256Hex(token);
      const { restored, stillLive } = await endSessions(
        c,
        (ending) => revertEmailChange(ending, c.var.audit, tokenHash, Date.now()),
        (undone) => undone.restored?.id,
      );
      if (restored) {
        const { removed } = restored;
        c.var.log.info("email_change_reverted", {
          userId: restored.id,
          email: maskEmail(restored.email),
          passkeysRemoved: removed.passkeys.length,
          factorsRemoved: removed.factors.length,
          providersRemoved: removed.providers.length,
        });
        const undone = {
          restoredEmail: restored.email,
          takenFrom: restored.takenFrom,
          since: restored.since,
          removed,
          providers: await linkedProviders(c.var.db, restored.id),
        };
        // Both addresses hear of it, with what went: the address the account was taken from is the owner's, if the
        // old mailbox was not theirs any more.
        const mailer = requestMailer(c, restored.id);
        await Promise.all([sendEmailChangeUndoneNotice(mailer, undone), sendEmailChangeRevertedNotice(mailer, undone)]);
        return c.text(AuthMessage.emailChangeReverted, 200);
      }
      return stillLive ? c.text(AuthMessage.revertAddressTaken, 409) : c.text(AuthMessage.invalidRevertToken, 401);
    },
  );
