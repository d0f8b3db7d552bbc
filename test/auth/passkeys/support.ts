import { env } from "cloudflare:workers";
import * as v from "valibot";
import { expect } from "vitest";
import { base32Decode, stepAt, totpAt } from "../../../src/lib/totp";
import type { Bindings } from "../../../src/types";
import { account, bearer, postLogin, type Tokens } from "../../support/accounts";
import { call, callWithEnv, PASSWORD } from "../../support/app";
import { SoftwarePasskey, type CeremonyOverrides } from "./authenticator";

/**
 * The passkey ceremonies as a client drives them, over the app's own fetch, with the software
 * authenticator: options from the API, the authenticator's answer, the verify. `bindings` replaces
 * bindings for every request of a flow (another RP ID, origins, apps).
 */

export type Overrides = Partial<Bindings>;

export function send(
  bindings: Overrides | undefined,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return bindings ? callWithEnv(bindings, method, path, body, headers) : call(method, path, body, headers);
}

export const CreationOptionsAnswer = v.object({
  options: v.object({
    challenge: v.string(),
    rp: v.object({ id: v.string(), name: v.string() }),
    user: v.object({ id: v.string(), name: v.string(), displayName: v.string() }),
  }),
});
export const RequestOptionsAnswer = v.object({ options: v.object({ challenge: v.string(), rpId: v.string() }) });
export const PasskeyAnswer = v.object({
  id: v.string(),
  name: v.string(),
  created_at: v.string(),
  last_used_at: v.nullable(v.string()),
  backed_up: v.boolean(),
});
export const LoginAnswer = v.strictObject({
  token: v.string(),
  refresh_token: v.string(),
  expires_in: v.literal(3600),
  device_token: v.string(),
});

/** A verified account, logged in with its password: its address and session. */
export async function signedInAccount(): Promise<{ email: string; session: Tokens }> {
  const email = await account();
  const response = await postLogin(email);
  expect(response.status).toBe(200);
  return { email, session: v.parse(LoginAnswer, await response.json()) };
}

/** POST /auth/passkeys/register/options with the password (and a code), as the answer came. */
export function registrationOptions(
  token: string,
  body: Record<string, unknown> = { password: PASSWORD },
  bindings?: Overrides,
): Promise<Response> {
  return send(bindings, "POST", "/auth/passkeys/register/options", body, bearer(token));
}

/** The creation options (expecting 200). */
export async function creationOptions(token: string, body?: Record<string, unknown>, bindings?: Overrides) {
  const response = await registrationOptions(token, body, bindings);
  expect(response.status).toBe(200);
  return v.parse(CreationOptionsAnswer, await response.json()).options;
}

/** POST /auth/passkeys/register/verify of what `passkey` made for fresh options (or `options`), as the answer came. */
export async function registerWith(
  token: string,
  passkey: SoftwarePasskey,
  {
    name,
    overrides,
    options,
    bindings,
  }: {
    name?: string;
    overrides?: CeremonyOverrides;
    options?: Awaited<ReturnType<typeof creationOptions>>;
    bindings?: Overrides;
  } = {},
): Promise<Response> {
  const response = await passkey.register(options ?? (await creationOptions(token, undefined, bindings)), overrides);
  return send(
    bindings,
    "POST",
    "/auth/passkeys/register/verify",
    { response, ...(name !== undefined && { name }) },
    bearer(token),
  );
}

/** A new software passkey registered to the session's account (expecting 201): the passkey and its `id`. */
export async function registeredPasskey(
  token: string,
  create: Parameters<typeof SoftwarePasskey.create>[0] = {},
  bindings?: Overrides,
) {
  const passkey = await SoftwarePasskey.create(create);
  const response = await registerWith(token, passkey, { bindings });
  expect(response.status).toBe(201);
  return { passkey, id: v.parse(PasskeyAnswer, await response.json()).id };
}

/** The request options of POST /auth/passkeys/login/options (expecting 200). */
export async function requestOptions(bindings?: Overrides) {
  const response = await send(bindings, "POST", "/auth/passkeys/login/options", {});
  expect(response.status).toBe(200);
  return v.parse(RequestOptionsAnswer, await response.json()).options;
}

export function verifySignIn(
  assertion: unknown,
  bindings?: Overrides,
  extra: Record<string, unknown> = {},
): Promise<Response> {
  return send(bindings, "POST", "/auth/passkeys/login/verify", { response: assertion, ...extra });
}

/** A whole passkey sign-in: new options, the assertion (with `overrides`), the verify. */
export async function signIn(
  passkey: SoftwarePasskey,
  overrides: Parameters<SoftwarePasskey["assert"]>[1] = {},
  bindings?: Overrides,
): Promise<Response> {
  return verifySignIn(await passkey.assert(await requestOptions(bindings), overrides), bindings);
}

/** A current TOTP code of `secret` (base32), `offset` steps from now. */
export function totpCode(secret: string, offset = 0): Promise<string> {
  return totpAt(base32Decode(secret), stepAt(Date.now()) + offset);
}

/** Turns TOTP on for the session's account (confirmed with the current step's code); returns the secret. */
export async function turnOnTotp(token: string): Promise<string> {
  const enrolled = await call("POST", "/auth/mfa/totp", { password: PASSWORD }, bearer(token));
  const { secret } = v.parse(v.object({ secret: v.string() }), await enrolled.json());
  expect((await call("POST", "/auth/mfa/totp/confirm", { code: await totpCode(secret) }, bearer(token))).status).toBe(
    200,
  );
  return secret;
}

export interface StoredPasskey {
  id: string;
  user_id: number;
  credential_id: string;
  public_key: string;
  counter: number;
  backed_up: number;
  transports: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
  added_by_session: string | null;
  counter_regressed_at: number | null;
}

/** The account's passkeys as D1 holds them, oldest first. */
export async function storedPasskeys(email: string): Promise<StoredPasskey[]> {
  const { results } = await env.DB.prepare(
    "SELECT p.* FROM passkeys p JOIN users u ON u.id = p.user_id WHERE u.email = ? ORDER BY p.created_at, p.id",
  )
    .bind(email)
    .all<StoredPasskey>();
  return results;
}

export async function storedChallenge(challenge: string) {
  return env.DB.prepare("SELECT kind, user_id, expires_at FROM passkey_challenges WHERE challenge = ?")
    .bind(challenge)
    .first<{ kind: string; user_id: number | null; expires_at: number }>();
}

/** Moves a challenge's expiry to the past, as if its five minutes were over. */
export async function expireChallenge(challenge: string): Promise<void> {
  await env.DB.prepare("UPDATE passkey_challenges SET expires_at = ? WHERE challenge = ?")
    .bind(Date.now() - 1, challenge)
    .run();
}

export const INVALID_PASSKEY = { status: 401, type: "text/plain; charset=UTF-8", body: "Invalid passkey." };
