/** What the loopback sign-in providers share with the tests running in the Workers runtime. */

/** An OpenID provider (oauth2-mock-server) and its test controls (`/_test/…` on the same server). */
export type OpenIdPeer = {
  issuer: string;
  /** The key id its tokens are signed under. */
  kid: string;
};

export type OAuthFixture = {
  google: OpenIdPeer;
  apple: OpenIdPeer & {
    /** The Sign in with Apple key the service signs its client secret with, and its public half for the tests. */
    teamId: string;
    keyId: string;
    privateKeyPem: string;
    publicJwk: { kty: string; crv: string; x: string; y: string };
  };
  /** The fake GitHub: web endpoints at its root, its API under /api/v3 (as GitHub Enterprise). */
  github: { url: string; apiUrl: string };
};

/**
 * How a test scripts the next web sign-in of an OpenID peer, keyed by the nonce the service sent it (read
 * from the authorize redirect): the id_token's claims (null removes one), a broken signature, an error
 * instead of the code at the authorization step, or the token endpoint's OAuth error.
 */
export interface SignInScript {
  nonce: string;
  claims?: Record<string, unknown>;
  corruptSignature?: boolean;
  authorizeError?: string;
  tokenError?: string;
}

/**
 * A GitHub sign-in, keyed by the service's state: the user's numeric id and e-mails, or an error at the authorization
 * step.
 */
export interface GitHubScript {
  state: string;
  id?: number;
  emails?: Array<{ email: string; primary: boolean; verified: boolean }>;
  authorizeError?: string;
  /** The status the API answers with instead of the user (GitHub having a bad day). */
  apiStatus?: number;
}
