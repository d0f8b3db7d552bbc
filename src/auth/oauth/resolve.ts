import type { OAuthProvider } from "../../config";
import type { Context } from "hono";
import type { AppEnv } from "../../types";
import { endSessions } from "../core/sessions";
import type { ProviderIdentity } from "./provider";
import {
  addressHolder,
  createPasswordless,
  identityAccount,
  linkIdentity,
  takeOver,
  updateShownEmail,
  type SignInAccount,
} from "./store";

/**
 * Account resolution, one rule for the web and the native flow (docs/social-sign-in.md, "Linking"):
 * 1. a known identity (issuer + subject) signs in to its account, whatever address it shows now;
 * 2. otherwise only an address the provider vouches for may match or create an account: a verified account
 *    holding it is linked; an unverified one (a squatter's registration) is taken over (store.takeOver); no
 *    account: a new verified account without a password;
 * 3. an address the provider does not vouch for (or none) makes and links nothing.
 * Every write is conditional; after them the identity is read again, so concurrent sign-ins agree.
 */

/**
 * Why a sign-in was refused after the provider's token checked out; the web flow's `error`, the native flow's JSON
 * `error`.
 */
export type Refusal = "email_not_verified" | "account_conflict";

export async function resolveAccount(
  c: Context<AppEnv>,
  provider: OAuthProvider,
  identity: ProviderIdentity,
  now: number,
): Promise<{ account: SignInAccount } | { refused: Refusal }> {
  const { db, log } = c.var;
  const { issuer, subject, email } = identity;
  const known = await identityAccount(db, issuer, subject);
  if (known) {
    if (email && email !== known.shown) await updateShownEmail(db, issuer, subject, email);
    return { account: known };
  }
  if (!email || !identity.vouched) return { refused: "email_not_verified" };
  const link = { provider: provider.name, issuer, subject, email, createdAt: now };
  const { holder, reserved } = await addressHolder(db, email, provider.name, now);
  if (!holder && !reserved && (await createPasswordless(db, c.var.audit, email, link, now))) {
    log.info("oauth_account_created", { provider: provider.name });
  } else if (
    holder &&
    !holder.isVerified &&
    (await endSessions(
      c,
      (ending) => takeOver(ending, c.var.audit, holder.id, link),
      (taken) => taken && holder.id,
    ))
  ) {
    log.warn("oauth_account_taken_over", { provider: provider.name, userId: holder.id });
  } else if (holder?.isVerified && !holder.linked) {
    await linkIdentity(db, c.var.audit, holder.id, link);
    log.info("oauth_identity_linked", { provider: provider.name, userId: holder.id });
  }
  // Linked by one of the writes above or by a concurrent sign-in; not linked when the address is reserved
  // for the account that gave it up, or its account has another identity of this provider.
  const resolved = await identityAccount(db, issuer, subject);
  return resolved ? { account: resolved } : { refused: "account_conflict" };
}
