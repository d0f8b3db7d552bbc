/**
 * `npm run oauth:provider` (scripts/oauth-provider.ts), on Node (`node --test`, run by `npm test` after vitest):
 * its options, who it signs in, and the id_tokens a real sign-in against it gets.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import {
  DEFAULT_PORT,
  devSettings,
  LOCAL_CLIENT,
  LOCAL_REDIRECT_URL,
  optionsOf,
  personOf,
  startLocalProvider,
  VOUCHED_SUBJECT,
  type LocalProvider,
} from "../../scripts/oauth-provider.ts";

const providers: LocalProvider[] = [];
after(() => Promise.all(providers.map((provider) => provider.stop())));

async function started(args: string[]): Promise<LocalProvider> {
  const provider = await startLocalProvider({ ...optionsOf(args), port: 0 });
  providers.push(provider);
  return provider;
}

/** The claims of a JWT (its signature is the service's business, tested in test/oauth/). */
function claimsOf(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split(".")[1]!, "base64url").toString("utf8")) as Record<string, unknown>;
}

/** A sign-in as an app's SDK makes it: authorize (with a nonce, when given), then the code at the token endpoint. */
async function signIn(issuer: string, nonce?: string): Promise<{ id_token: string; access_token: string }> {
  const authorize = new URL(`${issuer}/authorize`);
  authorize.search = new URLSearchParams({
    response_type: "code",
    client_id: LOCAL_CLIENT.id,
    redirect_uri: LOCAL_REDIRECT_URL,
    scope: "openid email",
    ...(nonce && { nonce }),
  }).toString();
  const redirect = await fetch(authorize, { redirect: "manual" });
  assert.equal(redirect.status, 302);
  const code = new URL(redirect.headers.get("location")!).searchParams.get("code");
  assert.ok(code, "no code in the provider's redirect");
  const token = await fetch(`${issuer}/token`, {
    method: "POST",
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      client_id: LOCAL_CLIENT.id,
      redirect_uri: LOCAL_REDIRECT_URL,
    }),
  });
  assert.equal(token.status, 200);
  return (await token.json()) as { id_token: string; access_token: string };
}

describe("optionsOf: the command line", () => {
  test("defaults to port 9400, you@example.test, vouched for, no subject given", () => {
    assert.deepEqual(optionsOf([]), {
      port: DEFAULT_PORT,
      email: "you@example.test",
      unverified: false,
      subject: undefined,
    });
    assert.equal(DEFAULT_PORT, 9400);
  });

  test("takes --port, --email, --unverified and --subject", () => {
    assert.deepEqual(optionsOf(["--port", "9500", "--email", "ada@example.test", "--unverified", "--subject", "s1"]), {
      port: 9500,
      email: "ada@example.test",
      unverified: true,
      subject: "s1",
    });
  });

  test("refuses a --port that is not a port number, and an empty --subject", () => {
    for (const port of ["http", "70000", "-1", "94.5"]) assert.throws(() => optionsOf(["--port", port]), /--port/);
    assert.throws(() => optionsOf(["--subject", " "]), /--subject/);
  });
});

describe("personOf: who signs in", () => {
  test("the same subject every run while the address is vouched for: the same account each time", () => {
    assert.deepEqual(personOf(optionsOf([])), {
      sub: VOUCHED_SUBJECT,
      email: "you@example.test",
      email_verified: true,
    });
  });

  test("a fresh subject every run with --unverified, so a subject that signed in vouched never answers for it", () => {
    const first = personOf(optionsOf(["--unverified"]));
    const second = personOf(optionsOf(["--unverified"]));
    assert.equal(first.email_verified, false);
    assert.match(first.sub, /^unverified-[0-9a-f]{16}$/);
    assert.notEqual(first.sub, second.sub);
    assert.notEqual(first.sub, VOUCHED_SUBJECT);
  });

  test("--subject wins, vouched for or not (to see a known subject sign in whatever the address shows)", () => {
    assert.equal(personOf(optionsOf(["--unverified", "--subject", VOUCHED_SUBJECT])).sub, VOUCHED_SUBJECT);
  });
});

describe("startLocalProvider: a sign-in against it", () => {
  test("id_tokens name the run's person, for the client, with the app's nonce; the access token is left alone", async () => {
    const provider = await started([]);
    const { id_token, access_token } = await signIn(provider.issuer, "n-0S6_WzA2Mj");
    assert.deepEqual(
      { ...claimsOf(id_token), iat: 0, exp: 0, nbf: 0 },
      {
        iss: provider.issuer,
        iat: 0,
        exp: 0,
        nbf: 0,
        sub: VOUCHED_SUBJECT,
        aud: LOCAL_CLIENT.id,
        nonce: "n-0S6_WzA2Mj",
        email: "you@example.test",
        email_verified: true,
      },
    );
    assert.notEqual(claimsOf(access_token).sub, VOUCHED_SUBJECT);
  });

  test("with --unverified, each run's id_tokens carry its own subject and email_verified false, nonce or none", async () => {
    const one = await started(["--unverified"]);
    const two = await started(["--unverified"]);
    const first = claimsOf((await signIn(one.issuer)).id_token);
    const again = claimsOf((await signIn(one.issuer, "abc")).id_token);
    const other = claimsOf((await signIn(two.issuer)).id_token);
    assert.equal(first.email_verified, false);
    assert.equal(first.sub, one.person.sub);
    assert.equal(again.sub, one.person.sub);
    assert.equal(other.sub, two.person.sub);
    assert.notEqual(first.sub, other.sub);
  });

  test("prints settings that point the worker at it: the issuer is its http://localhost address", async () => {
    const provider = await started([]);
    assert.match(provider.issuer, /^http:\/\/localhost:\d+$/);
    assert.deepEqual(devSettings(provider.issuer), {
      OAUTH_PROVIDERS: "local",
      OAUTH_LOCAL_CLIENT_ID: "local-client",
      OAUTH_LOCAL_CLIENT_SECRET: "local-secret",
      OAUTH_LOCAL_ISSUER: provider.issuer,
      OAUTH_REDIRECT_URLS: "http://localhost:5173/done",
    });
  });
});
