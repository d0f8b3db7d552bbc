/**
 * `npm run test:e2e`: the walk-throughs of the README and of the docs pages (WALK_THROUGHS), run as written
 * against a real `wrangler dev` (wrangler-dev.ts), in the order a newcomer follows them, so that they stay true.
 *
 * - The worker gets `.dev.vars.example`, as `npm run dev` makes it (a random JWT_SECRET_KEY, mail to a
 *   loopback SMTP server on a free port), its own fresh D1, and the settings `npm run oauth:provider` prints
 *   for the local OpenID provider, which this test starts on a free port (scripts/oauth-provider.ts).
 * - The ```sh blocks of every section whose heading says "Walk-through" (and of its subsections) run with
 *   bash, one bash per document (a new terminal), in order; `http://localhost:8787` is the worker's address,
 *   `http://localhost:9400` the provider's.
 * - A line `NAME=<example>   # … mail in the dev terminal …` gets the code of the next mail that holds one,
 *   from this test's SMTP server; a line `NAME=<example>   # … authenticator app shows …` gets the TOTP
 *   code of the shell's `$SECRET` for a time step not used yet (the next one at most, as the API's
 *   ±1-step drift allows; later codes wait for their step, as a person waits for the app).
 * - A command followed by a comment that starts with a status (`# 201 User created…`, `# 204`) or a JSON
 *   body (`# {"id":1,…}`), on its line or the next, must answer exactly that: a status needs `curl -i`;
 *   `…` stands for any text, an ISO timestamp for any timestamp. Every command must exit with 0.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import type { AddressInfo, Server as NetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseEnv } from "node:util";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import PostalMime from "postal-mime";
import { SMTPServer } from "smtp-server";
import { DEFAULT_PORT, devSettings, startLocalProvider, type LocalProvider } from "../../scripts/oauth-provider.ts";
import { base32Decode, stepAt, totpAt, TOTP_STEP_SECONDS } from "../../src/lib/totp.ts";
import { failuresOf, runInBash, stepsOf, walkThroughBlocks } from "./walk-throughs.ts";
import { root, START_WORKER_TIMEOUT_MS, startWorker, type Worker } from "./wrangler-dev.ts";

/** The documents whose walk-throughs run, in this order, each in a bash of its own, against one worker. */
const WALK_THROUGHS = ["README.md", "docs/sessions.md", "docs/mfa.md", "docs/social-sign-in.md"];
/** The addresses the walk-throughs write, and the variables of the shell that hold this run's. */
const DOC_ADDRESSES = {
  "http://localhost:8787": "$README_ORIGIN",
  [`http://localhost:${DEFAULT_PORT}`]: "$README_PROVIDER",
};
const MAIL_WAIT_MS = 15_000;
const RUN_TIMEOUT_MS = 120_000;

const tmp = mkdtempSync(join(tmpdir(), "notes-e2e-readme-"));
let worker: Worker | undefined;
let smtp: SMTPServer | undefined;
let helper: HttpServer | undefined;
let provider: LocalProvider | undefined;
let helperUrl = "";
/** Codes of the mails received, in order, and how many of them the walk-throughs have read. */
const mailedCodes: string[] = [];
let codesRead = 0;
let lastTotpStep = 0;

// --- Running them ------------------------------------------------------------------------------------

/** Runs a document's walk-throughs; the failures, one a line, with where they are. */
async function walkThrough(file: string): Promise<string[]> {
  const steps = walkThroughBlocks(readFileSync(join(root, file), "utf8")).flatMap((block) =>
    stepsOf(file, block, DOC_ADDRESSES),
  );
  assert.ok(
    steps.some((step) => step.expected),
    `${file}: no walk-through with an answer to check`,
  );
  const dir = mkdtempSync(join(tmp, `${file.replace(/\W/g, "_")}-`));
  const env = { README_ORIGIN: worker!.origin, README_PROVIDER: provider!.issuer, README_CHECK: helperUrl };
  const results = await runInBash(dir, steps, env, RUN_TIMEOUT_MS);
  return failuresOf(steps, results);
}

// --- What the reader reads elsewhere: the dev terminal's mail, the authenticator app ----------------

async function startMailbox(): Promise<number> {
  smtp = new SMTPServer({
    authMethods: ["PLAIN", "LOGIN"],
    allowInsecureAuth: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onAuth: (auth, _session, callback) => callback(null, { user: auth.username }),
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        void PostalMime.parse(Buffer.concat(chunks)).then((mail) => {
          // What the dev catcher shows as ">>> CODE: … <<<".
          const code = /\b\d{6}\b/.exec(mail.text ?? "")?.[0];
          if (code) mailedCodes.push(code);
          callback();
        }, callback);
      });
    },
  });
  const net = (smtp as unknown as { server: NetServer }).server;
  await new Promise<void>((resolve, reject) => {
    net.once("error", reject);
    smtp!.listen(0, "127.0.0.1", resolve);
  });
  return (net.address() as AddressInfo).port;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The code of the next mail that holds one, once it has arrived (mail goes out after the answer). */
async function nextMailedCode(): Promise<string | undefined> {
  for (const deadline = Date.now() + MAIL_WAIT_MS; Date.now() < deadline; await sleep(100)) {
    if (mailedCodes.length > codesRead) return mailedCodes[codesRead++];
  }
  return undefined;
}

/** A code of the authenticator app for `secret`, of a step no code was given for yet. */
async function nextTotp(secret: string): Promise<string> {
  const step = Math.max(stepAt(Date.now()), lastTotpStep + 1);
  // The API takes the step after the current one (drift); one further waits, as a person waits for the app.
  while (stepAt(Date.now()) < step - 1) await sleep(Math.min(1000, TOTP_STEP_SECONDS * 1000));
  lastTotpStep = step;
  return totpAt(base32Decode(secret), step);
}

async function startHelper(): Promise<void> {
  helper = createHttpServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const answer = (value: string | undefined) => {
      res.statusCode = value === undefined ? 404 : 200;
      res.end(value ?? "");
    };
    if (url.pathname === "/mail-code") void nextMailedCode().then(answer);
    else if (url.pathname === "/totp")
      void nextTotp(url.searchParams.get("secret") ?? "").then(answer, () => answer(undefined));
    else answer(undefined);
  });
  await new Promise<void>((resolve) => helper!.listen(0, "127.0.0.1", resolve));
  helperUrl = `http://127.0.0.1:${(helper.address() as AddressInfo).port}`;
}

before(
  async () => {
    for (const tool of ["bash", "curl", "jq", "node"]) {
      assert.equal(
        spawnSync(tool, ["--version"]).error,
        undefined,
        `the walk-throughs need ${tool} (apt-get install ${tool})`,
      );
    }
    const smtpPort = await startMailbox();
    await startHelper();
    provider = await startLocalProvider({ port: 0, email: "you@example.test", unverified: false });
    // .dev.vars as `npm run dev` creates it, with this test's mail server.
    const devVars = readFileSync(join(root, ".dev.vars.example"), "utf8")
      .replace(/^JWT_SECRET_KEY=.*$/m, `JWT_SECRET_KEY=${randomBytes(32).toString("base64url")}`)
      .replace(/^SMTP_PORT=.*$/m, `SMTP_PORT=${smtpPort}`);
    worker = await startWorker({
      ...Object.fromEntries(
        Object.entries(parseEnv(devVars)).flatMap(([name, value]) => (value === undefined ? [] : [[name, value]])),
      ),
      ...devSettings(provider.issuer),
    });
  },
  { timeout: START_WORKER_TIMEOUT_MS },
);

after(async () => {
  await worker?.stop();
  await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
  await new Promise<void>((resolve) => (helper ? helper.close(() => resolve()) : resolve()));
  await provider?.stop();
  rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
});

for (const [i, file] of WALK_THROUGHS.entries()) {
  test(
    `${file}'s walk-throughs run ${i === 0 ? "top to bottom" : "after the ones before, in a new terminal,"} and answer what they show`,
    { timeout: RUN_TIMEOUT_MS + 10_000 },
    async () => {
      assert.deepEqual(await walkThrough(file), []);
    },
  );
}
