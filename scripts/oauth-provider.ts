/**
 * `npm run oauth:provider`: a local OpenID provider to try social sign-in without registering anywhere
 * (oauth2-mock-server, the one the tests use). It signs in everyone at once as one person: subject
 * `local-user`, the address given with `--email` (default you@example.test), vouched for. It prints the
 * settings that point `npm run dev` at it, as `--var` arguments.
 *   npm run oauth:provider -- [--port 9400] [--email you@example.test] [--unverified]
 */
import { parseArgs } from "node:util";
import { Events, OAuth2Server } from "oauth2-mock-server";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "9400" },
    email: { type: "string", default: "you@example.test" },
    unverified: { type: "boolean", default: false },
  },
});
const port = Number(values.port);
if (!Number.isInteger(port) || port < 1 || port > 65535)
  throw new Error(`--port must be a port number: ${values.port}`);

const server = new OAuth2Server();
await server.issuer.keys.generate("RS256");
server.service.on(Events.BeforeTokenSigning, (token: { payload: Record<string, unknown> }) => {
  // The id_token (the one with a nonce), not the access token.
  if (token.payload.nonce === undefined) return;
  Object.assign(token.payload, { sub: "local-user", email: values.email, email_verified: !values.unverified });
});
await server.start(port, "127.0.0.1");

const issuer = server.issuer.url!;
const settings = {
  OAUTH_PROVIDERS: "local",
  OAUTH_LOCAL_CLIENT_ID: "local-client",
  OAUTH_LOCAL_CLIENT_SECRET: "local-secret",
  OAUTH_LOCAL_ISSUER: issuer,
  OAUTH_REDIRECT_URLS: "http://localhost:5173/done",
};
console.log(
  `[oauth] OpenID provider at ${issuer}: everyone signs in as ${values.email} (${values.unverified ? "not vouched for" : "vouched for"}).`,
);
console.log("[oauth] Start the worker against it in another terminal:");
console.log(
  `  npm run dev -- ${Object.entries(settings)
    .map(([name, value]) => `--var ${name}:${value}`)
    .join(" ")}`,
);
console.log(
  "[oauth] Then open http://localhost:8787/auth/oauth/local/authorize?redirect_uri=http://localhost:5173/done&code_challenge=…&code_challenge_method=S256",
);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => void server.stop().then(() => process.exit(0)));
}
