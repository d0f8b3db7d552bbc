/**
 * Every scenario of `npm run bench`, in the order they run. A new one is one more entry here: a
 * `throughput({...})` against a floor, a `cpu({...})` row, or a `{ key, run }` that returns rows of a table
 * of its own (as bcrypt does). bench/README.md lists them.
 */
import bcrypt from "bcryptjs";
import { attachmentsScenario } from "./lib/attachments.ts";
import { liveUpdates } from "./lib/live.ts";
import { median, send, type RequestSpec } from "./lib/load.ts";
import { cpu, fmt, throughput, type Context, type Row, type Scenario, type Table } from "./lib/measure.ts";
import type { Options } from "./lib/options.ts";
import type { Runtime } from "./lib/runtime.ts";
// The tests' software authenticator (no imports of its own: it runs in Node as in workerd).
import { SoftwarePasskey } from "../test/auth/passkeys/authenticator.ts";

export const BCRYPT_COST = 10;
const PASSWORD = "bench password 123";
/**
 * Accounts logged in in turn: more than 10 logins in flight to one address lock it, so one account under
 * load would measure the lock, not the login.
 */
const ACCOUNTS = 64;
const emailOf = (i: number) => `bench-login-${i}@example.com`;
/** The NOTES_AUTH=required scenarios' users: note `id` belongs to user `id % USERS`. */
const USERS = 16;

// The database's state, shared by the scenarios that need the same seed
/** Numbered notes ("Seeded note N"), or copies of one note of 120 characters (a list of 10,000 takes two chunks). */
type Seed = "numbered" | "copies";
const SEED_SQL: Record<Seed, string> = {
  numbered: "'Seeded note ' || n, 'Short content of seeded note number ' || n || '.'",
  copies: "'Note', printf('%.120c', 'x')",
};

/** Whether the base notes are in place, and how many times notes were seeded (a new seed needs new owners). */
let baseSeeded = false;
let generation = 0;
let ids = { lo: 0, hi: 0 };
let tokens: string[] | undefined;
let ownedGeneration = -1;
let passwordHash: string | undefined;

/** Replaces every note with `count` public ones, in one statement (a recursive CTE inside SQLite). */
async function seedNotes(rt: Runtime, count: number, seed: Seed = "numbered"): Promise<void> {
  await rt.sql("DELETE FROM notes");
  await rt.sql(
    `WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?1)
     INSERT INTO notes (title, content, created_at) SELECT ${SEED_SQL[seed]}, ?2 + n FROM seq`,
    count,
    Date.UTC(2026, 0, 1),
  );
  const [row] = await rt.sql("SELECT count(*) AS n, min(id) AS lo, max(id) AS hi FROM notes");
  if (Number(row?.n) !== count) throw new Error(`seeding ${count} notes left ${String(row?.n)}`);
  ids = { lo: Number(row!.lo), hi: Number(row!.hi) };
  baseSeeded = false;
  generation++;
}

const list = (count: number, seed?: Seed) => (ctx: Context) => seedNotes(ctx.rt, count, seed);
/** The single-note scenarios share one seed of opts.baseNotes notes, made again only after another replaced it. */
const baseNotes = async ({ rt, opts }: Context) => {
  if (!baseSeeded) await seedNotes(rt, opts.baseNotes);
  baseSeeded = true;
};
const randomId = () => ids.lo + Math.floor(Math.random() * (ids.hi - ids.lo + 1));

/** ACCOUNTS verified accounts with one bcrypt hash at BCRYPT_COST; returns the hash. */
async function accounts(rt: Runtime): Promise<string> {
  if (!passwordHash) {
    passwordHash = bcrypt.hashSync(PASSWORD, BCRYPT_COST);
    for (let i = 0; i < ACCOUNTS; i++) {
      await rt.sql("INSERT INTO users (email, password, isVerified) VALUES (?1, ?2, 1)", emailOf(i), passwordHash);
    }
  }
  return passwordHash;
}

const login = (i: number): RequestSpec => ({
  method: "POST",
  path: "/auth/login",
  body: JSON.stringify({ email: emailOf(i), password: PASSWORD }),
});

/** The base notes shared out among USERS accounts, each logged in once (a real session). */
async function privateNotes(ctx: Context): Promise<void> {
  await baseNotes(ctx);
  await accounts(ctx.rt);
  tokens ??= await Promise.all(
    Array.from({ length: USERS }, async (_, i) => {
      const answer = await send(ctx.rt.urls.appPrivate, login(i));
      if (answer.status !== 200) throw new Error(`bench login answered ${answer.status}: ${answer.body.slice(0, 200)}`);
      return (JSON.parse(answer.body) as { token: string }).token;
    }),
  );
  if (ownedGeneration !== generation) {
    for (let i = 0; i < USERS; i++) {
      await ctx.rt.sql(
        "UPDATE notes SET user_id = (SELECT id FROM users WHERE email = ?1) WHERE id % ?2 = ?3",
        emailOf(i),
        USERS,
        i,
      );
    }
    ownedGeneration = generation;
  }
}
const bearer = (user: number) => ({ Authorization: `Bearer ${tokens![user % USERS]}` });

/**
 * A new session (NOTES_AUTH=required) of the live scenario's writing account, or of a quiet one: two accounts the other
 * scenarios leave alone.
 */
async function liveSignIn(ctx: Context, account: "writer" | "quiet"): Promise<string> {
  await accounts(ctx.rt);
  const answer = await send(ctx.rt.urls.appPrivate, login(account === "writer" ? ACCOUNTS - 2 : ACCOUNTS - 3));
  if (answer.status !== 200) throw new Error(`bench login answered ${answer.status}: ${answer.body.slice(0, 200)}`);
  return (JSON.parse(answer.body) as { token: string }).token;
}
const randomUser = () => Math.floor(Math.random() * USERS);

// Requests
let counter = 0;
const getNote = (id = randomId()): RequestSpec => ({ method: "GET", path: `/notes/${id}` });
const patchNote = (id = randomId()): RequestSpec => ({
  method: "PATCH",
  path: `/notes/${id}`,
  body: JSON.stringify({ title: `Patched ${++counter}`, content: "Updated by the benchmark." }),
});
const postNote = (): RequestSpec => ({
  method: "POST",
  path: "/notes",
  body: JSON.stringify({ title: "Bench note", content: "Written by the benchmark, short content." }),
});
const asOwner = (make: (id: number) => RequestSpec) => () => {
  const id = randomId();
  return { ...make(id), headers: bearer(id) };
};
const privatePost = () => ({ ...postNote(), headers: bearer(randomUser()) });
const privatePage = (): RequestSpec => ({ method: "GET", path: "/notes?limit=50", headers: bearer(randomUser()) });
const listAll = (): RequestSpec => ({ method: "GET", path: "/notes" });

/** GET /notes with the list's own ETag: a poll, answered 304 from the notes' version alone. */
function poll(size: number) {
  let etag = "";
  return {
    setup: async (ctx: Context) => {
      await seedNotes(ctx.rt, size);
      etag = (await send(ctx.rt.urls.app, listAll())).headers.etag ?? "";
      if (!etag) ctx.fail("GET /notes carries no ETag");
    },
    next: (): RequestSpec => ({ method: "GET", path: "/notes", headers: { "If-None-Match": etag } }),
  };
}

// A passkey sign-in: a passkey registered through the API once, then assertions signed ahead of time, so
// that the CPU row counts the worker's work only (the options' requests are their own row).

/** The account of the attachments scenario. */
const ATTACHMENTS_ACCOUNT = ACCOUNTS - 4;

/** The account the passkey rows use (the refresh chain uses the last one). */
const PASSKEY_ACCOUNT = ACCOUNTS - 2;
let passkey: SoftwarePasskey | undefined;
let assertions: string[] = [];

async function expectJson<T>(ctx: Context, url: string, spec: RequestSpec, status: number): Promise<T> {
  const answer = await send(url, spec);
  if (answer.status !== status)
    throw new Error(`bench: ${spec.method} ${spec.path} answered ${answer.status}: ${answer.body.slice(0, 200)}`);
  return JSON.parse(answer.body) as T;
}

/** Registers the passkey (once), and signs `count` assertions, each for a challenge of its own. */
async function passkeyAssertions(ctx: Context, count: number): Promise<void> {
  const url = ctx.rt.urls.app;
  await accounts(ctx.rt);
  if (!passkey) {
    const { token } = await expectJson<{ token: string }>(ctx, url, login(PASSKEY_ACCOUNT), 200);
    const headers = { Authorization: `Bearer ${token}` };
    type Creation = { options: { challenge: string; rp: { id: string }; user: { id: string } } };
    const { options } = await expectJson<Creation>(
      ctx,
      url,
      {
        method: "POST",
        path: "/auth/passkeys/register/options",
        body: JSON.stringify({ password: PASSWORD }),
        headers,
      },
      200,
    );
    const created = await SoftwarePasskey.create();
    const response = await created.register(options);
    await expectJson(
      ctx,
      url,
      { method: "POST", path: "/auth/passkeys/register/verify", body: JSON.stringify({ response }), headers },
      201,
    );
    passkey = created;
  }
  assertions = [];
  for (let i = 0; i < count; i++) {
    const { options } = await expectJson<{ options: { challenge: string; rpId: string } }>(
      ctx,
      url,
      passkeyOptions(),
      200,
    );
    assertions.push(JSON.stringify({ response: await passkey.assert(options) }));
  }
}

const passkeyOptions = (): RequestSpec => ({ method: "POST", path: "/auth/passkeys/login/options", body: "{}" });

// bcrypt inside workerd, and login against one compare
const BCRYPT: Table = {
  title: "bcrypt inside workerd",
  about:
    `bcryptjs at cost ${BCRYPT_COST} in the counting build's probe: requests doing one operation and none, alternated, timed ` +
    "from Node (inside workerd the clock stands still while JavaScript runs); the difference of the medians is one " +
    "operation. Then POST /auth/login and a request doing exactly one compare, one request at a time, interleaved.",
  columns: ["Measure", "ms"],
};

async function bcryptTimes(ctx: Context): Promise<Row[]> {
  const { rt, opts } = ctx;
  const hash = await accounts(rt);
  const probe = (op: "hash" | "compare", n: number): RequestSpec => ({
    method: "POST",
    path: "/__bench/bcrypt",
    body: JSON.stringify({ op, n, cost: BCRYPT_COST, password: PASSWORD, hash }),
  });
  const timed = async (url: string, spec: RequestSpec, into: number[]) => {
    const answer = await send(url, spec);
    const probed =
      answer.status === 200 && spec.path === "/__bench/bcrypt"
        ? (JSON.parse(answer.body) as { n: number; matches: number })
        : undefined;
    if (answer.status !== 200 || (probed && probed.matches !== probed.n))
      ctx.fail(`${spec.path} answered ${answer.status}: ${answer.body.slice(0, 200)}`);
    into.push(answer.ms);
  };
  const one: Record<string, number> = {};
  for (const op of ["hash", "compare"] as const) {
    const samples: [number[], number[]] = [[], []];
    await timed(rt.urls.counting, probe(op, 1), []); // warm the isolate
    for (let i = 0; i < (opts.smoke ? 2 : 7); i++)
      for (const n of [0, 1]) await timed(rt.urls.counting, probe(op, n), samples[n]!);
    one[op] = median(samples[1]) - median(samples[0]);
  }
  const loginMs: number[] = [];
  const compareMs: number[] = [];
  for (let i = 0; i < 3; i++) await timed(rt.urls.app, login(0), []);
  for (let i = 0; i < (opts.smoke ? 6 : 100); i++) {
    const pair = [
      () => timed(rt.urls.app, login(0), loginMs),
      () => timed(rt.urls.counting, probe("compare", 1), compareMs),
    ];
    for (const run of i % 2 ? pair.reverse() : pair) await run();
  }
  const rows: [string, number, number][] = [
    ["one hash", one.hash!, 1],
    ["one compare", one.compare!, 1],
    [`POST /auth/login, p50 of ${loginMs.length}, one at a time`, median(loginMs), 1],
    [`a request doing one compare, p50 of ${compareMs.length}`, median(compareMs), 1],
    ["login p50 over the one-compare request's p50 (a ratio)", median(loginMs) / median(compareMs), 3],
  ];
  ctx.log(rows.map(([what, value, digits]) => `  ${what}: ${fmt(value, digits)}`).join("\n"));
  const data = (i: number, value: number) => (i ? value : { value, loginMs, compareMs });
  return rows.map(([what, value, digits], i) => ({
    table: BCRYPT,
    key: "bcrypt",
    cells: [what, fmt(value, digits)],
    data: data(i, value),
  }));
}

export function scenarios(opts: Options): Scenario[] {
  const base = `random among ${opts.baseNotes.toLocaleString("en-US")}`;
  const [small, large] = opts.listSizes;
  const [smallText, largeText] = opts.listSizes.map((n) => n.toLocaleString("en-US"));
  const auth = `NOTES_AUTH=required, ${USERS} users`;
  const search = (): RequestSpec => ({
    method: "GET",
    path: `/notes?q=${encodeURIComponent(`seeded ${1 + Math.floor(Math.random() * large)}`)}`,
  });
  const commonWords = ["seeded", "note", "short", "content", "of", "number"];
  const everyNote = (words: number) => (): RequestSpec => ({
    method: "GET",
    path: `/notes?q=${encodeURIComponent(Array.from({ length: words }, (_, i) => commonWords[i % commonWords.length]).join(" "))}`,
  });
  const withKey = (): RequestSpec => ({
    ...postNote(),
    headers: { "Idempotency-Key": `bench-${++counter}-${Math.random()}` },
  });
  let refreshToken = "";
  let loginTurn = 0;
  return [
    // Throughput, ours against the bare floor (public notes) or the same-work floor (NOTES_AUTH=required).
    throughput({ key: "get-note", label: `GET /notes/{id}, ${base}`, setup: baseNotes, request: getNote }),
    throughput({
      key: "update-note",
      label: `PATCH /notes/{id}, ${base}`,
      setup: baseNotes,
      request: patchNote,
      compare: "shape",
    }),
    throughput({ key: "create-note", label: "POST /notes", expectStatus: 201, request: postNote, compare: "shape" }),
    throughput({
      key: "get-note-private",
      label: `GET /notes/{id}, ${auth}`,
      private: true,
      setup: privateNotes,
      request: asOwner(getNote),
    }),
    throughput({
      key: "update-note-private",
      label: `PATCH /notes/{id}, ${auth}`,
      private: true,
      setup: privateNotes,
      request: asOwner(patchNote),
      compare: "shape",
    }),
    throughput({
      key: "create-note-private",
      label: `POST /notes, ${auth}`,
      private: true,
      setup: privateNotes,
      request: privatePost,
      expectStatus: 201,
      compare: "shape",
    }),
    throughput({
      key: "page-50-private",
      label: `GET /notes?limit=50, ${auth}`,
      private: true,
      setup: privateNotes,
      request: privatePage,
    }),
    throughput({ key: `list-${small}`, label: `GET /notes, ${smallText} notes`, setup: list(small), request: listAll }),
    throughput({ key: `list-${large}`, label: `GET /notes, ${largeText} notes`, setup: list(large), request: listAll }),
    throughput({
      key: `list-${large}-copies`,
      label: `GET /notes, ${largeText} copies of a 120-character note`,
      setup: list(large, "copies"),
      request: listAll,
    }),

    // CPU time per request, one at a time.
    cpu({
      key: `list-${small}`,
      label: `GET /notes, ${smallText} notes`,
      requests: 200,
      floor: "floor",
      setup: list(small),
      next: listAll,
    }),
    cpu({
      key: `poll-${small}`,
      label: `GET /notes with a matching If-None-Match, ${smallText} notes`,
      requests: 200,
      expectStatus: 304,
      ...poll(small),
    }),
    cpu({
      key: `list-${large}`,
      label: `GET /notes, ${largeText} notes`,
      requests: 20,
      floor: "floor",
      setup: list(large),
      next: listAll,
    }),
    cpu({
      key: `poll-${large}`,
      label: `GET /notes with a matching If-None-Match, ${largeText} notes`,
      requests: 50,
      expectStatus: 304,
      ...poll(large),
    }),
    cpu({
      key: `search-${large}`,
      label: `GET /notes?q= (one note's two words), ${largeText} notes`,
      requests: 100,
      setup: list(large),
      next: search,
    }),
    // The dearest searches q allows: every note matches, and ranks; then 12 words (the most) that every note holds.
    cpu({
      key: `search-${large}-every-note`,
      label: `GET /notes?q= (a word every note holds), ${largeText} notes`,
      requests: 20,
      setup: list(large),
      next: everyNote(1),
    }),
    cpu({
      key: `search-${large}-12-words`,
      label: `GET /notes?q= (12 words every note holds), ${largeText} notes`,
      requests: 20,
      setup: list(large),
      next: everyNote(12),
    }),
    cpu({
      key: "get-note",
      label: "GET /notes/{id}",
      requests: 200,
      floor: "floor",
      setup: baseNotes,
      next: () => getNote(),
    }),
    cpu({
      key: "update-note",
      label: "PATCH /notes/{id}",
      requests: 200,
      floor: "floor",
      setup: baseNotes,
      next: () => patchNote(),
    }),
    cpu({ key: "create-note", label: "POST /notes", requests: 200, floor: "floor", expectStatus: 201, next: postNote }),
    cpu({
      key: "create-note-idempotency-key",
      label: "POST /notes with a new Idempotency-Key",
      requests: 200,
      expectStatus: 201,
      next: withKey,
    }),
    ...[
      { key: "get-note-private", label: "GET /notes/{id}", next: asOwner(getNote) },
      { key: "update-note-private", label: "PATCH /notes/{id}", next: asOwner(patchNote) },
      { key: "create-note-private", label: "POST /notes", next: privatePost, expectStatus: 201 },
      { key: "page-50-private", label: "GET /notes?limit=50", next: privatePage },
    ].map((c) =>
      cpu({
        ...c,
        label: `${c.label}, NOTES_AUTH=required`,
        requests: 200,
        ours: "appPrivate",
        floor: "floorAuth",
        setup: privateNotes,
      }),
    ),
    cpu({
      key: "refresh",
      label: "POST /auth/refresh (a chain of rotations)",
      requests: 100,
      setup: async ({ rt }) => {
        await accounts(rt);
        refreshToken = (JSON.parse((await send(rt.urls.app, login(ACCOUNTS - 1))).body) as { refresh_token: string })
          .refresh_token;
      },
      // Each refresh rotates the session: the next one sends the token the last one answered.
      next: (previous) => {
        if (previous) refreshToken = (JSON.parse(previous.body) as { refresh_token: string }).refresh_token;
        return { method: "POST", path: "/auth/refresh", body: JSON.stringify({ refresh_token: refreshToken }) };
      },
    }),
    cpu({
      key: "passkey-options",
      label: "POST /auth/passkeys/login/options",
      requests: 200,
      setup: async ({ rt }) => void (await accounts(rt)),
      next: passkeyOptions,
    }),
    cpu({
      key: "passkey-sign-in",
      label: "POST /auth/passkeys/login/verify (ES256, one passkey sign-in)",
      requests: 100,
      // Every request of the row's three repetitions needs an assertion of its own, signed before they start.
      setup: (ctx) => passkeyAssertions(ctx, 3 * (ctx.opts.smoke ? Math.max(2, Math.ceil(100 / 20)) : 100)),
      next: () => ({ method: "POST", path: "/auth/passkeys/login/verify", body: assertions.shift() ?? "{}" }),
    }),
    cpu({
      key: "login",
      label: `POST /auth/login, BCRYPT_COST=${BCRYPT_COST}, ${ACCOUNTS} accounts in turn`,
      requests: 20,
      setup: async ({ rt }) => void (await accounts(rt)),
      next: () => login(++loginTurn % ACCOUNTS),
    }),

    { key: "bcrypt", run: bcryptTimes },

    // Live updates: an account with 100 open sockets, and writes to its notes.
    liveUpdates(liveSignIn),
    attachmentsScenario(async (ctx) => {
      await accounts(ctx.rt);
      return (await expectJson<{ token: string }>(ctx, ctx.rt.urls.appPrivate, login(ATTACHMENTS_ACCOUNT), 200)).token;
    }),
  ];
}
