/**
 * `npm run oauth:provider`: a local OpenID provider to try social sign-in without registering anywhere
 * (oauth2-mock-server, the one the tests use). It signs everyone in at once as one person, the address given
 * with `--email` (default you@example.test), and prints the settings that point `npm run dev` at it, as
 * `--var` arguments.
 *   npm run oauth:provider -- [--port 9400] [--email you@example.test] [--unverified] [--subject <id>]
 *
 * The person's subject (the provider's id for them) is `local-user` while the address is vouched for, so every
 * run signs in to the same account. With `--unverified` it is a fresh one each run: a subject the service has
 * seen signs in to its account whatever the address shows (docs/social-sign-in.md, the linking rule), so a
 * fixed one would stop showing `email_not_verified` once it had signed in vouched. `--subject` picks one.
 */
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Events, OAuth2Server } from "oauth2-mock-server";

export const DEFAULT_PORT = 9400;
/** The subject of a vouched-for sign-in unless `--subject` says otherwise: the same account every run. */
export const VOUCHED_SUBJECT = "local-user";
/** The client the printed settings register with the provider, and the app URL a sign-in returns to. */
export const LOCAL_CLIENT = { name: "local", id: "local-client", secret: "local-secret" } as const;
export const LOCAL_REDIRECT_URL = "http://localhost:5173/done";

export interface LocalProviderOptions {
  port: number;
  email: string;
  /** The address is not vouched for (`email_verified: false`). */
  unverified: boolean;
  /** The subject; by default VOUCHED_SUBJECT, or a fresh one with `unverified`. */
  subject?: string;
}

/** The options of a command line (`--port`, `--email`, `--unverified`, `--subject`). */
export function optionsOf(args: string[]): LocalProviderOptions {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: "string", default: String(DEFAULT_PORT) },
      email: { type: "string", default: "you@example.test" },
      unverified: { type: "boolean", default: false },
      subject: { type: "string" },
    },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port must be a port number: ${values.port}`);
  if (values.subject !== undefined && values.subject.trim() === "") throw new Error("--subject must not be empty");
  return { port, email: values.email, unverified: values.unverified, subject: values.subject };
}

/** Who signs in: the subject and the claims every id_token of this run carries. */
export function personOf(options: LocalProviderOptions): { sub: string; email: string; email_verified: boolean } {
  const sub =
    options.subject ?? (options.unverified ? `unverified-${randomBytes(8).toString("hex")}` : VOUCHED_SUBJECT);
  return { sub, email: options.email, email_verified: !options.unverified };
}

/** The worker's settings for this provider, as `npm run dev -- --var NAME:VALUE` takes them. */
export function devSettings(issuer: string): Record<string, string> {
  const prefix = `OAUTH_${LOCAL_CLIENT.name.toUpperCase()}_`;
  return {
    OAUTH_PROVIDERS: LOCAL_CLIENT.name,
    [`${prefix}CLIENT_ID`]: LOCAL_CLIENT.id,
    [`${prefix}CLIENT_SECRET`]: LOCAL_CLIENT.secret,
    [`${prefix}ISSUER`]: issuer,
    OAUTH_REDIRECT_URLS: LOCAL_REDIRECT_URL,
  };
}

export interface LocalProvider {
  /** `http://localhost:<port>` */
  issuer: string;
  person: ReturnType<typeof personOf>;
  stop(): Promise<void>;
}

/** Starts the provider on 127.0.0.1 (`port` 0: any free port). */
export async function startLocalProvider(options: LocalProviderOptions): Promise<LocalProvider> {
  const person = personOf(options);
  const server = new OAuth2Server();
  await server.issuer.keys.generate("RS256");
  server.service.on(Events.BeforeTokenSigning, (token: { payload: Record<string, unknown> }) => {
    // The id_token, not the access token (which carries a scope).
    if ("scope" in token.payload) return;
    Object.assign(token.payload, person);
  });
  await server.start(options.port, "127.0.0.1");
  return { issuer: server.issuer.url!, person, stop: () => server.stop() };
}

async function main(): Promise<void> {
  let options: LocalProviderOptions;
  try {
    options = optionsOf(process.argv.slice(2));
  } catch (err) {
    console.error(`[oauth] ${(err as Error).message}`);
    process.exit(2);
  }
  const provider = await startLocalProvider(options);
  const { issuer, person } = provider;
  console.log(
    `[oauth] OpenID provider at ${issuer}: everyone signs in as ${person.email}, subject ${person.sub} (${person.email_verified ? "vouched for" : "not vouched for"}).`,
  );
  console.log("[oauth] Start the worker against it in another terminal:");
  console.log(
    `  npm run dev -- ${Object.entries(devSettings(issuer))
      .map(([name, value]) => `--var ${name}:${value}`)
      .join(" ")}`,
  );
  console.log(
    `[oauth] Then open http://localhost:8787/auth/oauth/${LOCAL_CLIENT.name}/authorize?redirect_uri=${LOCAL_REDIRECT_URL}&code_challenge=…&code_challenge_method=S256`,
  );
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => void provider.stop().then(() => process.exit(0)));
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
