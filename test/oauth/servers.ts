/**
 * Real sign-in providers on loopback for the tests, run in Node by vitest's globalSetup:
 * - two OpenID providers (oauth2-mock-server: discovery, JWKS, authorization code flow with PKCE, signed
 *   id_tokens), one configured as `google`, one as `apple`; tests script each web sign-in by its nonce
 *   (POST /_test/script) and have native id_tokens signed (POST /_test/sign, with the provider's key or a
 *   foreign one under the same key id), and read what the token endpoint was sent (GET /_test/token-request);
 * - a fake GitHub: /login/oauth/authorize and /login/oauth/access_token, and the API's /user and
 *   /user/emails under /api/v3, scripted by the service's state (POST /_test/script).
 */
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, importJWK, SignJWT } from "jose";
import { Events, OAuth2Server } from "oauth2-mock-server";
import type { GitHubScript, OAuthFixture, OpenIdPeer, SignInScript } from "./types.ts";

const HOST = "127.0.0.1";

function sendJson(res: ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Turns a JWT's signature into someone else's: the same length, one character changed. */
function corrupt(jwt: string): string {
  const last = jwt.at(-2) === "A" ? "B" : "A";
  return `${jwt.slice(0, -2)}${last}${jwt.at(-1)}`;
}

async function openIdPeer(): Promise<{ peer: OpenIdPeer; stop: () => Promise<void> }> {
  const server = new OAuth2Server();
  const key = await server.issuer.keys.generate("RS256");
  const foreign = await importJWK(
    await exportJWK(generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey),
    "RS256",
  );
  const scripts = new Map<string, SignInScript>();
  const tokenRequests = new Map<string, unknown>();
  const nonceOf = new WeakMap<object, string>();

  server.service.on(
    Events.BeforeAuthorizeRedirect,
    ({ url }: { url: URL }, req: IncomingMessage & { query?: Record<string, unknown> }) => {
      const script = scripts.get(String(req.query?.nonce));
      if (!script?.authorizeError) return;
      url.searchParams.delete("code");
      url.searchParams.set("error", script.authorizeError);
    },
  );
  server.service.on(
    Events.BeforeTokenSigning,
    (token: { payload: Record<string, unknown> }, req: IncomingMessage & { body?: unknown }) => {
      const nonce = token.payload.nonce;
      if (typeof nonce !== "string") return;
      nonceOf.set(req, nonce);
      tokenRequests.set(nonce, req.body);
      for (const [claim, value] of Object.entries(scripts.get(nonce)?.claims ?? {})) {
        if (value === null) delete token.payload[claim];
        else token.payload[claim] = value;
      }
    },
  );
  server.service.on(
    Events.BeforeResponse,
    (response: { body: Record<string, unknown>; statusCode: number }, req: IncomingMessage) => {
      const script = scripts.get(nonceOf.get(req) ?? "");
      if (script?.tokenError) Object.assign(response, { body: { error: script.tokenError }, statusCode: 400 });
      else if (script?.corruptSignature) response.body.id_token = corrupt(String(response.body.id_token));
    },
  );

  server.service.addRoute("POST", "/_test/script", (req: IncomingMessage & { body?: unknown }, res: ServerResponse) => {
    const script = req.body as SignInScript;
    scripts.set(script.nonce, script);
    sendJson(res, { ok: true });
  });
  server.service.addRoute(
    "GET",
    "/_test/token-request",
    (req: IncomingMessage & { query?: Record<string, unknown> }, res: ServerResponse) => {
      sendJson(res, tokenRequests.get(String(req.query?.nonce)) ?? null);
    },
  );
  server.service.addRoute(
    "POST",
    "/_test/sign",
    async (req: IncomingMessage & { body?: unknown }, res: ServerResponse) => {
      const { claims, expiresIn, foreignKey } = req.body as {
        claims: Record<string, unknown>;
        expiresIn?: number;
        foreignKey?: boolean;
      };
      const token = foreignKey
        ? await new SignJWT({
            iss: server.issuer.url,
            iat: Math.floor(Date.now() / 1000),
            exp: Math.floor(Date.now() / 1000) + 3600,
            ...claims,
          })
            .setProtectedHeader({ alg: "RS256", kid: key.kid })
            .sign(foreign)
        : await server.issuer.buildToken({
            expiresIn,
            scopesOrTransform: (_header, payload) => Object.assign(payload, claims),
          });
      sendJson(res, { id_token: token });
    },
  );

  await server.start(0, HOST);
  return { peer: { issuer: server.issuer.url!, kid: key.kid }, stop: () => server.stop() };
}

async function gitHub(): Promise<{ url: string; stop: () => Promise<void> }> {
  const scripts = new Map<string, GitHubScript>();
  const byCode = new Map<string, GitHubScript>();
  const byToken = new Map<string, GitHubScript>();
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", `http://${HOST}`);
      const body = await readBody(req);
      const route = `${req.method} ${url.pathname}`;
      if (route === "POST /_test/script") {
        const script = JSON.parse(body) as GitHubScript;
        scripts.set(script.state, script);
        return sendJson(res, { ok: true });
      }
      if (route === "GET /login/oauth/authorize") {
        const state = url.searchParams.get("state") ?? "";
        const script = scripts.get(state);
        const back = new URL(url.searchParams.get("redirect_uri") ?? "");
        if (script?.authorizeError) back.searchParams.set("error", script.authorizeError);
        else if (script) {
          byCode.set(`code-${state}`, script);
          back.searchParams.set("code", `code-${state}`);
        }
        back.searchParams.set("state", state);
        res.writeHead(302, { Location: back.href });
        return res.end();
      }
      if (route === "POST /login/oauth/access_token") {
        // GitHub answers a bad code with 200 and an error body.
        const script = byCode.get(new URLSearchParams(body).get("code") ?? "");
        if (!script) return sendJson(res, { error: "bad_verification_code" });
        const token = randomUUID();
        byToken.set(token, script);
        return sendJson(res, { access_token: token, token_type: "bearer", scope: "read:user,user:email" });
      }
      const script = byToken.get((req.headers.authorization ?? "").replace(/^Bearer /, ""));
      if (!script) return sendJson(res, { message: "Bad credentials" }, 401);
      if (script.apiStatus) return sendJson(res, { message: "Unavailable" }, script.apiStatus);
      if (route === "GET /api/v3/user") return sendJson(res, { id: script.id, login: `user${script.id}` });
      if (route === "GET /api/v3/user/emails") return sendJson(res, script.emails ?? []);
      sendJson(res, { message: "Not Found" }, 404);
    })();
  });
  const port = await new Promise<number>((resolve) =>
    server.listen(0, HOST, () => resolve((server.address() as AddressInfo).port)),
  );
  return { url: `http://${HOST}:${port}`, stop: () => new Promise((resolve) => server.close(() => resolve())) };
}

export async function startOAuthPeers(): Promise<{ fixture: OAuthFixture; stop: () => Promise<void> }> {
  const [google, apple, github] = await Promise.all([openIdPeer(), openIdPeer(), gitHub()]);
  const appleKey = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const fixture: OAuthFixture = {
    google: google.peer,
    apple: {
      ...apple.peer,
      teamId: "TEAM123456",
      keyId: "KEY1234567",
      privateKeyPem: appleKey.privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
      publicJwk: await exportJWK(appleKey.publicKey).then(({ kty = "", crv = "", x = "", y = "" }) => ({
        kty,
        crv,
        x,
        y,
      })),
    },
    github: { url: github.url, apiUrl: `${github.url}/api/v3` },
  };
  return {
    fixture,
    stop: async () => {
      await Promise.all([google.stop(), apple.stop(), github.stop()]);
    },
  };
}
