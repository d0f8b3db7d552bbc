import { importPKCS8, SignJWT } from "jose";
import { ConfigError, type ClientSecret } from "../../config";
import { SECOND } from "../../lib/units";
import { APPLE_CLIENT_SECRET_RENEW_MS, APPLE_CLIENT_SECRET_TTL_MS } from "../policy";
import { OpenIdProvider } from "./oidc";

/**
 * Sign in with Apple: an OpenID provider with three differences, all here. Its client secret is an ES256 JWT
 * the service signs (below); it posts its answer to the callback as a form when an address is asked for
 * (`response_mode=form_post`); and its id_tokens say `email_verified` as the string "true" (Apple documents
 * both spellings).
 */
export class AppleProvider extends OpenIdProvider {
  protected override authorizeExtras(): Record<string, string> {
    return { response_mode: "form_post" };
  }

  protected override vouches(claim: unknown): boolean {
    return claim === true || claim === "true";
  }

  protected override clientSecret(): Promise<string | undefined> {
    const { clientId, issuer, clientSecret: secret } = this.settings;
    if (secret?.kind !== "apple") return super.clientSecret();
    return appleClientSecret(clientId, issuer, secret, Date.now());
  }
}

/**
 * Sign in with Apple's client secret: an ES256 JWT the service signs with its key from Apple (header `kid`
 * = OAUTH_APPLE_KEY_ID; `iss` = OAUTH_APPLE_TEAM_ID, `sub` = the client id, `aud` = Apple's issuer, `iat`,
 * `exp`; Apple accepts up to six months). Each isolate signs one and uses it until it is close to expiring.
 */

type AppleSecret = Extract<ClientSecret, { kind: "apple" }>;

const signed = new Map<string, { jwt: string; expiresAt: number }>();

export async function appleClientSecret(
  clientId: string,
  audience: string,
  secret: AppleSecret,
  now: number,
): Promise<string> {
  const id = [clientId, audience, secret.teamId, secret.keyId, secret.privateKey].join("\n");
  const cached = signed.get(id);
  if (cached && cached.expiresAt - now > APPLE_CLIENT_SECRET_RENEW_MS) return cached.jwt;
  const key = await importPKCS8(secret.privateKey, "ES256").catch(() => {
    throw new ConfigError("OAUTH_APPLE_PRIVATE_KEY is not an ES256 (P-256) private key in PKCS#8 PEM");
  });
  const expiresAt = now + APPLE_CLIENT_SECRET_TTL_MS;
  const jwt = await new SignJWT({})
    .setProtectedHeader({ alg: "ES256", kid: secret.keyId })
    .setIssuer(secret.teamId)
    .setSubject(clientId)
    .setAudience(audience)
    .setIssuedAt(Math.floor(now / SECOND))
    .setExpirationTime(Math.floor(expiresAt / SECOND))
    .sign(key);
  signed.set(id, { jwt, expiresAt });
  return jwt;
}
