import * as oauth from "oauth4webapi";
import type { OAuthProvider } from "../../config";
import { PROVIDER_TIMEOUT_MS } from "../policy";
import { normalizeEmail } from "../requests";
import { CodeGrantProvider } from "./code-grant";
import { ProviderUnavailable, type IdTokenCheck, type ProviderIdentity, type Server } from "./provider";

/**
 * GitHub is OAuth 2 without id_tokens, all of its differences here: fixed endpoints under its web address
 * (OAUTH_GITHUB_URL), its own scopes, and the identity from its user API: the numeric user id (GET /user)
 * and the primary address (GET /user/emails), vouched for when GitHub has verified it. The API base is
 * OAUTH_GITHUB_API_URL (GitHub Enterprise, tests).
 */
export class GitHubProvider extends CodeGrantProvider {
  readonly supportsIdTokens = false;
  protected readonly scope = "read:user user:email";

  protected server(): Promise<Server> {
    const { issuer } = this.settings;
    return Promise.resolve({
      issuer,
      authorization_endpoint: `${issuer}/login/oauth/authorize`,
      token_endpoint: `${issuer}/login/oauth/access_token`,
    });
  }

  protected async identityOfResponse(server: Server, response: Response) {
    const result = await oauth.processAuthorizationCodeResponse(
      server,
      { client_id: this.settings.clientId },
      response,
    );
    return githubIdentity(this.settings, result.access_token);
  }

  identity(): Promise<IdTokenCheck> {
    return Promise.resolve({ refused: "invalid", reason: "GitHub issues no id_tokens" });
  }
}

interface GitHubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
}

async function api(provider: OAuthProvider, path: string, accessToken: string): Promise<unknown> {
  const response = await fetch(`${provider.apiUrl}${path}`, {
    headers: {
      Authorization: `Bearer ${accessToken}`,
      Accept: "application/vnd.github+json",
      "User-Agent": "notes-api",
    },
    signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS),
  }).catch((err: unknown) => {
    throw new ProviderUnavailable(`GitHub ${path}: ${String(err)}`);
  });
  if (!response.ok) throw new ProviderUnavailable(`GitHub ${path} answered ${response.status}`);
  return response.json();
}

function isEmail(value: unknown): value is GitHubEmail {
  return (
    typeof value === "object" &&
    value !== null &&
    "email" in value &&
    typeof value.email === "string" &&
    "primary" in value &&
    "verified" in value
  );
}

/** The identity behind a GitHub access token; undefined when GitHub's answers are not what its API documents. */
async function githubIdentity(provider: OAuthProvider, accessToken: string): Promise<ProviderIdentity | undefined> {
  const [user, emails] = await Promise.all([
    api(provider, "/user", accessToken),
    api(provider, "/user/emails", accessToken),
  ]);
  const id = typeof user === "object" && user !== null && "id" in user ? user.id : undefined;
  if (!Number.isSafeInteger(id) || !Array.isArray(emails)) return undefined;
  const primary = emails.filter(isEmail).find((entry) => entry.primary);
  return {
    issuer: provider.issuer,
    subject: String(id),
    email: primary ? normalizeEmail(primary.email) : undefined,
    vouched: primary?.verified === true,
  };
}
