import { Hono } from "hono";
import { sha256Hex } from "../../lib/crypto";
import { badJson, describeRoute, text } from "../../lib/describe";
import { base64url } from "../../lib/encoding";
import { maskEmail } from "../../lib/log";
import { DAY } from "../../lib/units";
import { inlinePagePolicy } from "../../lib/page";
import { CONTENT_SECURITY_POLICY, DOCUMENT_SECURITY_HEADERS } from "../../lib/security-headers";
import { jsonBody } from "../../lib/validation";
import type { AppEnv } from "../../types";
import { mailerOf, sendEmailChangeRevertedNotice } from "../core/mails";
import { AuthMessage } from "../messages";
import { REVERT_PAGE_HTML } from "./revert-page";
import { accountErrors, accountsTag } from "../openapi";
import { RevertEmailChangeBody } from "../requests";
import { endSessions } from "../core/sessions";
import { revertEmailChange } from "./store";
import { EMAIL_CHANGE_REVERT_TTL_MS } from "../policy";

/**
 * Undoing an e-mail change. A change is confirmed by the new mailbox alone, so a phished password would
 * be a permanent takeover; the notice to the old address therefore carries a revert token, valid
 * EMAIL_CHANGE_REVERT_TTL_MS, that puts the old address back, ends every session, clears the password
 * (the phisher knows it) and removes second factors added since: the owner then sets a new password with
 * forgot-password, through the mailbox they just got back. While the token lives the old address stays
 * reserved for the account. The token is 128 random bits (nothing to guess within the per-client limit),
 * stored as its SHA-256 only, and used up by the one batch that reverts (store.ts). The trade-off of the
 * 7 days: docs/accounts.md.
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
        "Puts the old address back, ends every session, clears the password (set a new one with forgot-password) and removes the second factors added " +
        "since the change; mails the address it takes the account from. Tokens of earlier changes stay good; this one's and later ones' are used up.",
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
        c.var.log.info("email_change_reverted", { userId: restored.id, email: maskEmail(restored.email) });
        // The address the account was taken from hears of it: the owner, if the old mailbox was not theirs any more.
        await sendEmailChangeRevertedNotice(mailerOf(c.var), restored.takenFrom, restored.email);
        return c.text(AuthMessage.emailChangeReverted, 200);
      }
      return stillLive ? c.text(AuthMessage.revertAddressTaken, 409) : c.text(AuthMessage.invalidRevertToken, 401);
    },
  );
