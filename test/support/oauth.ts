import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { GitHubScript, SignInScript } from "../oauth/types";
import type { Tokens } from "./accounts";
import { BASE, call, randomEmail } from "./app";

/** The app URLs of OAUTH_REDIRECT_URLS in vitest.config.ts. */
export const APP_REDIRECT = "https://app.example/oauth/done";

export const NATIVE_REDIRECT = "com.example.app:/oauth";

export type OpenIdName = "google" | "apple";

/** An app's PKCE pair: a random verifier and its S256 challenge. */
export async function pkcePair(): Promise<{ verifier: string; challenge: string }> {
  const verifier = base64urlOf(crypto.getRandomValues(new Uint8Array(32)));
  return {
    verifier,
    challenge: base64urlOf(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)))),
  };
}

function base64urlOf(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/** GET /auth/oauth/{provider}/authorize with the app's parameters (any left undefined is left out). */
export function authorize(provider: string, params: Record<string, string | undefined>): Promise<Response> {
  const query = new URLSearchParams(
    Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  return call("GET", `/auth/oauth/${provider}/authorize?${query.toString()}`);
}

export function locationOf(response: Response): URL {
  const location = response.headers.get("location");
  if (!location) throw new Error(`no Location in a ${response.status}`);
  return new URL(location);
}

/** Scripts what an OpenID peer does for the sign-in whose authorize redirect carried `nonce`. */
export async function scriptSignIn(provider: OpenIdName, script: SignInScript): Promise<void> {
  const response = await fetch(`${env.OAUTH[provider].issuer}/_test/script`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(script),
  });
  expect(response.status).toBe(200);
}

/** Scripts the fake GitHub for the sign-in whose authorize redirect carried `state`. */
export async function scriptGitHub(script: GitHubScript): Promise<void> {
  const response = await fetch(`${env.OAUTH.github.url}/_test/script`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(script),
  });
  expect(response.status).toBe(200);
}

/** What the browser does at the provider: follows the authorize URL, and answers where the provider sends it back. */
export async function atProvider(authorizeUrl: URL): Promise<URL> {
  const response = await fetch(authorizeUrl, { redirect: "manual" });
  expect(response.status).toBe(302);
  return locationOf(response);
}

/** The provider's redirect back to the service, through the app. */
export function callback(url: URL): Promise<Response> {
  expect(url.origin).toBe(BASE);
  return call("GET", `${url.pathname}${url.search}`);
}

/** A fresh identity's claims: a random subject and address, vouched for. */
export function identityClaims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { sub: `sub-${crypto.randomUUID()}`, email: randomEmail("social"), email_verified: true, ...overrides };
}

export interface WebSignIn {
  /** Where the service sent the browser back to the app. */
  app: URL;
  verifier: string;
}

/**
 * A whole web sign-in with an OpenID peer up to the app's redirect, the peer scripted with `script` (its
 * nonce filled in): authorize, the provider, the callback.
 */
export async function webSignIn(
  provider: OpenIdName,
  script: Omit<SignInScript, "nonce">,
  { redirectUri = APP_REDIRECT, state = "app-state" }: { redirectUri?: string; state?: string | null } = {},
): Promise<WebSignIn> {
  const { verifier, challenge } = await pkcePair();
  const started = await authorize(provider, {
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: state ?? undefined,
  });
  expect(started.status).toBe(302);
  const toProvider = locationOf(started);
  await scriptSignIn(provider, { ...script, nonce: toProvider.searchParams.get("nonce")! });
  const back = await callback(await atProvider(toProvider));
  expect(back.status).toBe(302);
  return { app: locationOf(back), verifier };
}

export function exchangeLoginCode(code: unknown, verifier: unknown): Promise<Response> {
  return call("POST", "/auth/oauth/token", { code, code_verifier: verifier });
}

/** A web sign-in with `claims` through to the tokens (expecting 200). */
export async function socialLogIn(provider: OpenIdName, claims: Record<string, unknown>): Promise<Tokens> {
  const { app, verifier } = await webSignIn(provider, { claims });
  const response = await exchangeLoginCode(app.searchParams.get("code"), verifier);
  if (response.status !== 200)
    throw new Error(`oauth token: expected 200, got ${response.status}: ${await response.text()}`);
  return response.json();
}

/** An id_token the OpenID peer signs with `claims` (its own key, or a foreign one under the same key id). */
export async function signedIdToken(
  provider: OpenIdName,
  claims: Record<string, unknown>,
  options: { expiresIn?: number; foreignKey?: boolean } = {},
): Promise<string> {
  const response = await fetch(`${env.OAUTH[provider].issuer}/_test/sign`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ claims, ...options }),
  });
  return ((await response.json()) as { id_token: string }).id_token;
}

export function idTokenSignIn(provider: string, body: Record<string, unknown>): Promise<Response> {
  return call("POST", `/auth/oauth/${provider}/id-token`, body);
}

/** The token endpoint request the OpenID peer received for the sign-in of `nonce` (its form fields). */
export async function tokenRequestOf(provider: OpenIdName, nonce: string): Promise<Record<string, string> | null> {
  const response = await fetch(`${env.OAUTH[provider].issuer}/_test/token-request?nonce=${encodeURIComponent(nonce)}`);
  return response.json();
}
