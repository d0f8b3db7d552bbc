import { env } from "cloudflare:workers";
import { decodeJwt } from "jose";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { issueDeviceToken } from "../../../src/auth/core/devices";
import { STALE_DEVICE_FAILURES_PER_HOUR } from "../../../src/auth/policy";
import { AuthMessage } from "../../../src/auth/messages";
import { DAY } from "../../../src/lib/units";
import { Contract } from "../../contract";
import {
  bearer,
  logIn,
  me,
  NEW_PASSWORD,
  otherCode,
  register,
  reset,
  resetCode,
  storedUser,
  verifiedAccount,
} from "../../support/accounts";
import {
  call,
  callWithEnv,
  fireCron,
  JSON_TYPE,
  jsonOf,
  PASSWORD,
  randomEmail,
  tally,
  TEXT,
  textOf,
} from "../../support/app";
import { CodePrefix, codesMailed } from "../../support/mail";

/**
 * The limits an attacker who knows only an address runs into, and that they cannot turn against the
 * address's owner: each rule one at a time and under a concurrent burst (every request launched before
 * any answer is read), and at the end the whole lock-out script replayed against one owner.
 */

const LoginAnswer = v.strictObject({
  token: v.string(),
  refresh_token: v.string(),
  expires_in: v.literal(3600),
  device_token: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{22}\.[0-9]+\.[A-Za-z0-9_-]{43}$/)),
});
type LoginAnswer = v.InferOutput<typeof LoginAnswer>;

function loginFrom(email: string, password: string, deviceToken?: unknown): Promise<Response> {
  return call(
    "POST",
    "/auth/login",
    deviceToken === undefined ? { email, password } : { email, password, device_token: deviceToken },
  );
}

/** Logs in (expecting 200) and returns the answer, checked against its shape. */
async function loggedIn(email: string, deviceToken?: unknown): Promise<LoginAnswer> {
  const response = await loginFrom(email, PASSWORD, deviceToken);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe(JSON_TYPE);
  return v.parse(LoginAnswer, await response.json());
}

const deviceIdOf = (deviceToken: string) => deviceToken.split(".")[0];

/** `count` wrong passwords for `email` at once, with `deviceToken` if given. */
function wrongLogins(email: string, count: number, deviceToken?: unknown): Promise<Response[]> {
  return Promise.all(Array.from({ length: count }, () => loginFrom(email, "wrong password", deviceToken)));
}

async function addressLockedUntil(email: string): Promise<number | null> {
  return env.DB.prepare("SELECT lockedUntil FROM login_failures WHERE email = ?")
    .bind(email)
    .first<number>("lockedUntil");
}

async function deviceRow(deviceToken: string) {
  return env.DB.prepare("SELECT failures, locked_until FROM device_login_failures WHERE device_id = ?")
    .bind(deviceIdOf(deviceToken))
    .first<{ failures: number; locked_until: number }>();
}

describe("device tokens (POST /auth/login)", () => {
  it("adds a device_token to a successful login's JSON, and renews it for the device it came from", async () => {
    const email = await verifiedAccount();
    const first = await loggedIn(email);
    const again = await loggedIn(email, first.device_token);
    expect(deviceIdOf(again.device_token)).toBe(deviceIdOf(first.device_token));
    // A login without one is a new device.
    expect(deviceIdOf((await loggedIn(email)).device_token)).not.toBe(deviceIdOf(first.device_token));
  });

  it("lets the owner's device in while 40 wrong passwords sent together lock the address for everyone else", async () => {
    const email = await verifiedAccount();
    const { device_token: device } = await loggedIn(email);

    expect(tally(await wrongLogins(email, 40))).toEqual({ 401: 10, 429: 30 });
    expect(await textOf(await loginFrom(email, PASSWORD))).toEqual({
      status: 429,
      type: TEXT,
      body: AuthMessage.loginLocked,
    });

    await loggedIn(email, device);
    // The device's success neither counted against the address nor lifted its lock.
    expect(await addressLockedUntil(email)).toBeGreaterThan(Date.now() + 14 * 60_000);
    expect((await loginFrom(email, PASSWORD)).status).toBe(429);
  });

  it("judges a device on its own failures: of 40 wrong passwords with its token, 5 are checked, and only it is locked", async () => {
    const email = await verifiedAccount();
    const { device_token: device } = await loggedIn(email);
    const { device_token: otherDevice } = await loggedIn(email);

    const responses = await wrongLogins(email, 40, device);
    expect(tally(responses)).toEqual({ 401: 5, 429: 35 });
    expect(await textOf(responses.find((response) => response.status === 401)!)).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
    const refused = responses.find((response) => response.status === 429)!;
    expect(await textOf(refused)).toEqual({ status: 429, type: TEXT, body: AuthMessage.loginLocked });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(14 * 60);
    expect(await deviceRow(device)).toMatchObject({ failures: 5 });

    // The right password from that device waits out its lock; the address and the owner's other device
    // are untouched.
    expect((await loginFrom(email, PASSWORD, device)).status).toBe(429);
    expect(await addressLockedUntil(email)).toBeNull();
    await loggedIn(email, otherDevice);
    await loggedIn(email);
  });

  it("lets the right password through as a device's fifth attempt, and that success ends the device's run", async () => {
    const email = await verifiedAccount();
    const { device_token: device } = await loggedIn(email);
    for (let i = 0; i < 4; i++) expect((await loginFrom(email, "wrong password", device)).status).toBe(401);
    expect(await deviceRow(device)).toMatchObject({ failures: 4, locked_until: 0 });
    await loggedIn(email, device);
    expect(await deviceRow(device)).toBeNull();
  });

  it("counts a token of another address for nothing: the attempt is the address's", async () => {
    const victim = await verifiedAccount();
    const attacker = await verifiedAccount();
    const { device_token: attackersDevice } = await loggedIn(attacker);

    expect(tally(await wrongLogins(victim, 40, attackersDevice))).toEqual({ 401: 10, 429: 30 });
    expect(await deviceRow(attackersDevice)).toBeNull();
    expect((await loginFrom(victim, PASSWORD, attackersDevice)).status).toBe(429);
  });

  it.each([
    ["a token whose MAC is altered", (token: string) => token.slice(0, -2) + (token.endsWith("AA") ? "BA" : "AA")],
    ["a token whose device id is altered", (token: string) => (token.startsWith("A") ? "B" : "A") + token.slice(1)],
    [
      "a token whose expiry is pushed back",
      (token: string) => token.replace(/\.([0-9]+)\./, (_match, expiry: string) => `.${Number(expiry) + 1}.`),
    ],
    ["a garbled string", () => "not a device token"],
    ["an empty string", () => ""],
    ["a number", () => 12345],
    ["null", () => null],
    ["an object", (token: string) => ({ token })],
  ])("treats %s as no token: never a 400, counted on the address", async (_case, spoil: (token: string) => unknown) => {
    const email = await verifiedAccount();
    const spoilt = spoil((await loggedIn(email)).device_token);
    // Accepted where the password is right...
    await loggedIn(email, spoilt);
    // ...and no way past the address's lock.
    expect(tally(await wrongLogins(email, 12, spoilt))).toEqual({ 401: 10, 429: 2 });
    expect(await textOf(await loginFrom(email, PASSWORD, spoilt))).toEqual({
      status: 429,
      type: TEXT,
      body: AuthMessage.loginLocked,
    });
  });

  it("counts an expired token for nothing", async () => {
    const email = await verifiedAccount();
    const expired = await issueDeviceToken(
      env.JWT_SECRET_KEY,
      { id: (await storedUser(email))!.id, email },
      Date.now() - 181 * DAY,
    );
    expect(tally(await wrongLogins(email, 11, expired))).toEqual({ 401: 10, 429: 1 });
    expect((await loginFrom(email, PASSWORD, expired)).status).toBe(429);
  });

  it("keeps a device's token across a password change (F11): the device that changed it logs in with it while the address is locked", async () => {
    const email = await verifiedAccount();
    const { device_token: device, token } = await loggedIn(email);
    const change = await call(
      "POST",
      "/auth/change-password",
      { current_password: PASSWORD, new_password: NEW_PASSWORD },
      bearer(token),
    );
    expect(change.status).toBe(200);
    expect(tally(await wrongLogins(email, 12))).toEqual({ 401: 10, 429: 2 });
    const again = await loginFrom(email, NEW_PASSWORD, device);
    expect(again.status).toBe(200);
    expect(deviceIdOf(v.parse(LoginAnswer, await again.json()).device_token)).toBe(deviceIdOf(device));
  });

  it("keeps a device's token across a reset, judged on that device's own failures", async () => {
    const email = await verifiedAccount();
    const { device_token: device } = await loggedIn(email);
    expect((await reset(email, await resetCode(email))).status).toBe(200);
    expect(tally(await wrongLogins(email, 12))).toEqual({ 401: 10, 429: 2 });
    expect(tally(await wrongLogins(email, 6, device))).toEqual({ 401: 5, 429: 1 });
    expect(await deviceRow(device)).toMatchObject({ failures: 5 });
  });

  it("gives the tokens issued before a password change 10 failures an hour together, beside one try each: 30 wrong passwords from 6 gathered tokens, 26 checked", async () => {
    const email = await verifiedAccount();
    // Someone who knew the old password gathered a token per login, a while before the reset (token times
    // have whole seconds, so they are minted as those logins did, ten seconds ago).
    const id = (await storedUser(email))!.id;
    const gathered = await Promise.all(
      Array.from({ length: 6 }, () => issueDeviceToken(env.JWT_SECRET_KEY, { id, email }, Date.now() - 10_000)),
    );
    expect((await reset(email, await resetCode(email))).status).toBe(200);
    const owners = v.parse(LoginAnswer, await (await loginFrom(email, NEW_PASSWORD)).json()).device_token;

    const answers = await Promise.all(
      gathered.flatMap((device) => Array.from({ length: 5 }, () => loginFrom(email, "wrong password", device))),
    );
    // 6 own tries and 10 of the shared allowance judged on their devices' runs, 10 on the address's (the tenth locks
    // it), the rest refused.
    expect(tally(answers)).toEqual({ 401: 26, 429: 4 });
    // The owner's device, which signed in since the reset, is judged on its own failures and gets in.
    expect((await loginFrom(email, NEW_PASSWORD, owners)).status).toBe(200);
  });

  /** An account whose password was reset after someone gathered `count` device tokens of it; and the owner's. */
  async function staleTokens(count: number) {
    const email = await verifiedAccount();
    const id = (await storedUser(email))!.id;
    // Minted as logins of ten seconds ago did (token times have whole seconds).
    const mint = () => issueDeviceToken(env.JWT_SECRET_KEY, { id, email }, Date.now() - 10_000);
    const phisher = await Promise.all(Array.from({ length: count }, mint));
    const owner = await mint();
    expect((await reset(email, await resetCode(email))).status).toBe(200);
    return { email, id, phisher, owner };
  }

  async function staleSpent(userId: number): Promise<number> {
    return (
      (await env.DB.prepare("SELECT count FROM deployment_windows WHERE name = ?")
        .bind(`stale_device_failures:${userId}`)
        .first<number>("count")) ?? 0
    );
  }

  it("lets the owner's device that has not signed in since the change in with the right password after a phisher's stale tokens spent the allowance and locked the address (N7)", async () => {
    const { email, id, phisher, owner } = await staleTokens(3);
    for (const device of phisher) for (let i = 0; i < 5; i++) await loginFrom(email, "wrong password", device);
    expect(await staleSpent(id)).toBe(STALE_DEVICE_FAILURES_PER_HOUR);
    await wrongLogins(email, 12);
    expect(await textOf(await loginFrom(email, NEW_PASSWORD))).toEqual({
      status: 429,
      type: TEXT,
      body: AuthMessage.loginLocked,
    });
    const answer = await loginFrom(email, NEW_PASSWORD, owner);
    expect(answer.status).toBe(200);
    expect(deviceIdOf(v.parse(LoginAnswer, await answer.json()).device_token)).toBe(deviceIdOf(owner));
  });

  it("gives a slot of the shared allowance back when the device's own lock refuses: a locked stale token's 429s spend nothing of it (N7)", async () => {
    const { email, id, phisher } = await staleTokens(1);
    const [device] = phisher as [string];
    for (let i = 0; i < 5; i++)
      expect(await textOf(await loginFrom(email, "wrong password", device))).toEqual({
        status: 401,
        type: TEXT,
        body: Contract.invalidCredentials,
      });
    // Its own try, then four of the shared allowance; the fifth failure locked the device.
    expect(await staleSpent(id)).toBe(4);
    for (let i = 0; i < 5; i++)
      expect(await textOf(await loginFrom(email, "wrong password", device))).toEqual({
        status: 429,
        type: TEXT,
        body: AuthMessage.loginLocked,
      });
    expect(await staleSpent(id)).toBe(4);
  });

  it("holds under a burst: 40 wrong passwords with one stale token at once get its device's 5 checks and the address's 10, and the owner's device still gets in (N7)", async () => {
    const { email, id, phisher, owner } = await staleTokens(1);
    const answers = await wrongLogins(email, 40, phisher[0]);
    expect(tally(answers)).toEqual({ 401: 15, 429: 25 });
    // Only the slots of logins its device's lock let through stay spent.
    expect(await staleSpent(id)).toBeGreaterThanOrEqual(4);
    expect(await staleSpent(id)).toBeLessThanOrEqual(5);
    expect((await loginFrom(email, NEW_PASSWORD, owner)).status).toBe(200);
  });

  it("answers a login without device_token as before, with device_token added to the 200", async () => {
    const email = await verifiedAccount();
    const response = await loginFrom(email, PASSWORD);
    const body = await jsonOf(response);
    expect(body).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: {
        token: expect.any(String),
        refresh_token: expect.any(String),
        expires_in: 3600,
        device_token: expect.any(String),
      },
    });
    expect(await textOf(await loginFrom(randomEmail(), PASSWORD))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
  });
});

/** The three endpoints that check the caller's password again, each sent with `password`. */
const recheck = {
  "change-password": (token: string, password: string) =>
    call("POST", "/auth/change-password", { current_password: password, new_password: NEW_PASSWORD }, bearer(token)),
  "change-email": (token: string, password: string) =>
    call("POST", "/auth/change-email", { password, new_email: randomEmail("new") }, bearer(token)),
  "delete-account": (token: string, password: string) => call("DELETE", "/auth/account", { password }, bearer(token)),
};
const recheckNames = Object.keys(recheck) as Array<keyof typeof recheck>;

async function sessionFailures(token: string): Promise<number | null> {
  return env.DB.prepare("SELECT password_failures FROM sessions WHERE id = ?")
    .bind(String(decodeJwt(token).sid))
    .first<number>("password_failures");
}

describe("password re-checks of a session (change-password, change-email, delete-account)", () => {
  it.each(recheckNames)(
    "%s: of 40 wrong passwords sent together, 5 are checked and the session ends; the rest of the account is untouched",
    async (name) => {
      const email = await verifiedAccount();
      const { token } = await logIn(email);
      const other = await logIn(email);

      const responses = await Promise.all(Array.from({ length: 40 }, () => recheck[name](token, "not my password")));
      expect(tally(responses)).toEqual({ 401: 40 });
      const bodies = await Promise.all(responses.map((response) => response.text()));
      expect(bodies.filter((body) => body === AuthMessage.wrongPassword)).toHaveLength(5);
      expect(bodies.filter((body) => body === AuthMessage.invalidAccessToken)).toHaveLength(35);

      // That session is over, the right password included; the owner's other session and the address's
      // login are as they were, and nothing was changed.
      expect(await textOf(await recheck[name](token, PASSWORD))).toEqual({
        status: 401,
        type: TEXT,
        body: AuthMessage.invalidAccessToken,
      });
      expect((await me(token)).status).toBe(401);
      expect((await me(other.token)).status).toBe(200);
      expect(
        await env.DB.prepare("SELECT count(*) AS n FROM login_failures WHERE email = ?").bind(email).first("n"),
      ).toBe(0);
      expect((await loginFrom(email, PASSWORD)).status).toBe(200);
      expect(await storedUser(email)).not.toBeNull();
    },
  );

  it("works for the owner's session while the address's login is locked", async () => {
    const email = await verifiedAccount();
    const { token } = await logIn(email);
    expect(tally(await wrongLogins(email, 12))).toEqual({ 401: 10, 429: 2 });
    expect((await recheck["change-password"](token, PASSWORD)).status).toBe(200);
  });

  it("gives a right password's claim back: four wrong and any number of right ones keep the session", async () => {
    const email = await verifiedAccount();
    const { token } = await logIn(email);
    for (let i = 0; i < 4; i++) expect((await recheck["change-email"](token, "not my password")).status).toBe(401);
    expect(await sessionFailures(token)).toBe(4);
    // Changing to the current address is refused only after the password check.
    const sameAddress = () =>
      call("POST", "/auth/change-email", { password: PASSWORD, new_email: email }, bearer(token));
    for (let i = 0; i < 3; i++) expect((await sameAddress()).status).toBe(400);
    expect(await sessionFailures(token)).toBe(4);
    // The fifth wrong one ends it.
    expect(await textOf(await recheck["change-email"](token, "not my password"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.wrongPassword,
    });
    expect(await sessionFailures(token)).toBeNull();
  });
});

const ForgotAnswer = v.strictObject({
  message: v.literal(AuthMessage.resetRequested),
  request_id: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{22}$/)),
});

/** A client's address, fresh per call, so that per-client counts never carry over between tests. */
function randomIp(): string {
  const [a, b, c] = crypto.getRandomValues(new Uint8Array(3));
  return `10.${a}.${b}.${c}`;
}

/**
 * forgot-password from the client `ip`, waiting for the mail it leaves to waitUntil (see callWithEnv):
 * the answer's status, content type and body, and its request id.
 */
async function forgotFrom(email: string, ip: string, bindings: Partial<Env> = {}) {
  const response = await callWithEnv(bindings, "POST", "/auth/forgot-password", { email }, { "CF-Connecting-IP": ip });
  const answer = await jsonOf(response);
  return { answer, requestId: v.parse(ForgotAnswer, answer.body).request_id };
}

function resetWith(
  email: string,
  requestId: string,
  token: string,
  password = NEW_PASSWORD,
  headers: Record<string, string> = {},
): Promise<Response> {
  return call("POST", "/auth/reset-password", { email, request_id: requestId, token, password }, headers);
}

/** The codes of every reset mail `email` has received, oldest first. */
const resetMailCodes = (email: string) => codesMailed(email, CodePrefix.reset);

/** The tries each of `requestIds` has had at its code (null for a request that stored no code). */
async function triesOf(requestIds: string[]): Promise<Array<number | null>> {
  return Promise.all(
    requestIds.map((id) =>
      env.DB.prepare("SELECT attempts FROM reset_requests WHERE id = ?").bind(id).first<number>("attempts"),
    ),
  );
}

describe("reset codes bound to their request (forgot-password, reset-password)", () => {
  it("answers every address alike: known, unverified, unknown, and out of mail allowance", async () => {
    const known = await verifiedAccount();
    const unverified = randomEmail();
    await register(unverified);
    const ip = randomIp();
    const throttled = await verifiedAccount();
    await forgotFrom(throttled, ip); // the client's mail to it; the next within the minute sends nothing

    const answers = await Promise.all(
      [known, unverified, randomEmail(), throttled].map((email) => forgotFrom(email, ip)),
    );
    for (const { answer } of answers) {
      expect(answer).toEqual({
        status: 200,
        type: JSON_TYPE,
        body: { message: AuthMessage.resetRequested, request_id: expect.any(String) },
      });
    }
    expect(new Set(answers.map(({ requestId }) => requestId)).size).toBe(4);
    expect(await resetMailCodes(throttled)).toHaveLength(1);
  });

  it("keeps the owner's code whole while 40 wrong guesses run together under other request ids, the owner's code among them", async () => {
    const email = await verifiedAccount();
    const owner = await forgotFrom(email, randomIp());
    const [code] = await resetMailCodes(email);
    // The attacker's own requests (their mails go to the owner) and ids made up.
    const attackerIp = randomIp();
    const attacker = [await forgotFrom(email, attackerIp), await forgotFrom(email, randomIp())].map(
      ({ requestId }) => requestId,
    );
    const madeUp = ["AAAAAAAAAAAAAAAAAAAAAA", "not a request id"];
    const ids = [...attacker, ...madeUp];

    const guesses = Array.from({ length: 40 }, (_, i) =>
      resetWith(email, ids[i % ids.length]!, i % 8 === 0 ? code! : otherCode(code!)),
    );
    const responses = await Promise.all(guesses);
    expect(tally(responses)).toEqual({ 401: 40 });
    expect(new Set(await Promise.all(responses.map((response) => response.text())))).toEqual(
      new Set([AuthMessage.invalidResetCode]),
    );

    // Five tries at most at each of the attacker's codes, none at the owner's, and the owner's code works.
    expect(await triesOf([owner.requestId, ...attacker])).toEqual([0, 5, 5]);
    expect(await textOf(await resetWith(email, owner.requestId, code!))).toEqual({
      status: 200,
      type: TEXT,
      body: AuthMessage.passwordReset,
    });
    expect((await loginFrom(email, NEW_PASSWORD)).status).toBe(200);
  });

  it("compares a code at most 5 times: of 40 wrong guesses under its id sent together; the right code is then refused", async () => {
    const email = await verifiedAccount();
    const { requestId } = await forgotFrom(email, randomIp());
    const [code] = await resetMailCodes(email);
    const responses = await Promise.all(
      Array.from({ length: 40 }, () => resetWith(email, requestId, otherCode(code!))),
    );
    expect(tally(responses)).toEqual({ 401: 40 });
    expect(await triesOf([requestId])).toEqual([5]);
    // After the burst: within it, the right code could claim one of the five tries (the database's order is
    // not the client's), and would then rightly reset.
    expect(await textOf(await resetWith(email, requestId, code!))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidResetCode,
    });
    expect(await triesOf([requestId])).toEqual([5]);
    expect((await loginFrom(email, PASSWORD)).status).toBe(200);
  });

  it("refuses a right code with another request's id, of the same address or another", async () => {
    const email = await verifiedAccount();
    const mine = await forgotFrom(email, randomIp());
    const [code] = await resetMailCodes(email);
    const other = await forgotFrom(email, randomIp());
    const elsewhere = await forgotFrom(await verifiedAccount(), randomIp());
    for (const requestId of [other.requestId, elsewhere.requestId]) {
      expect(await textOf(await resetWith(email, requestId, code!))).toEqual({
        status: 401,
        type: TEXT,
        body: AuthMessage.invalidResetCode,
      });
    }
    // A request id of another address does not even reach that address's code.
    expect(await triesOf([mine.requestId, other.requestId, elsewhere.requestId])).toEqual([0, 1, 0]);
    expect((await resetWith(email, mine.requestId, code!)).status).toBe(200);
  });
});

describe("reset mail the attacker cannot use up (forgot-password)", () => {
  it("mails one client once for 40 requests sent together, and still mails the owner from another client", async () => {
    const email = await verifiedAccount();
    const ip = randomIp();
    const answers = await Promise.all(Array.from({ length: 40 }, () => forgotFrom(email, ip)));
    expect(answers.every(({ answer }) => answer.status === 200)).toBe(true);
    expect(await resetMailCodes(email)).toHaveLength(1);

    const owner = await forgotFrom(email, randomIp());
    const codes = await resetMailCodes(email);
    expect(codes).toHaveLength(2);
    expect((await resetWith(email, owner.requestId, codes[1]!)).status).toBe(200);
  });

  it("counts all addresses of one IPv6 /64 as one client: 40 requests from 40 of them mail once", async () => {
    const email = await verifiedAccount();
    const prefix = `2001:db8:${Math.floor(Math.random() * 0xffff).toString(16)}:1`;
    await Promise.all(Array.from({ length: 40 }, (_, i) => forgotFrom(email, `${prefix}::${(i + 1).toString(16)}`)));
    expect(await resetMailCodes(email)).toHaveLength(1);
  });

  it("caps the address at 5 reset mails an hour whoever asks: 40 clients at once get 5 mails", async () => {
    const email = await verifiedAccount();
    await Promise.all(Array.from({ length: 40 }, () => forgotFrom(email, randomIp())));
    expect(await resetMailCodes(email)).toHaveLength(5);
    expect(
      await env.DB.prepare("SELECT mails_in_window FROM reset_mail_allowances WHERE email = ? AND client = '*'")
        .bind(email)
        .first("mails_in_window"),
    ).toBe(5);
  });

  it("stores nothing for an address without an account", async () => {
    const unknown = randomEmail();
    await forgotFrom(unknown, randomIp());
    expect(
      await env.DB.prepare("SELECT count(*) AS n FROM reset_mail_allowances WHERE email = ?").bind(unknown).first("n"),
    ).toBe(0);
  });
});

describe("the lock-out script, replayed", () => {
  it("leaves the owner able to log in from their device and reset with their own code, and the attacker no more than the stated guesses", async () => {
    // The owner: an account, a device that has logged in, and two live sessions.
    const email = await verifiedAccount();
    const { device_token: ownersDevice, token: ownersSession } = await loggedIn(email);
    const stolen = await loggedIn(email);

    // The attacker knows the address only, and sends from one IPv4 address with the per-client limiter
    // on (30 requests a minute): 10 wrong logins, 3 forgot-password calls, 15 wrong reset codes and 2
    // more forgot-password calls, 30 requests in all, each group as one burst.
    const attackerIp = randomIp();
    const asAttacker = { "CF-Connecting-IP": attackerIp };
    const withLimiter = (method: string, path: string, body: unknown) =>
      callWithEnv({ RATE_LIMITS: "on" }, method, path, body, asAttacker);
    const logins = await Promise.all(
      Array.from({ length: 10 }, () => withLimiter("POST", "/auth/login", { email, password: "wrong password" })),
    );
    expect(tally(logins)).toEqual({ 401: 10 });
    const firstForgets = await Promise.all(
      Array.from({ length: 3 }, () => forgotFrom(email, attackerIp, { RATE_LIMITS: "on" })),
    );
    const attackerIds = firstForgets.map(({ requestId }) => requestId);
    const guesses = await Promise.all(
      Array.from({ length: 15 }, (_, i) =>
        withLimiter("POST", "/auth/reset-password", {
          email,
          request_id: attackerIds[i % 3],
          token: String(100_000 + i),
          password: NEW_PASSWORD,
        }),
      ),
    );
    expect(tally(guesses)).toEqual({ 401: 15 });
    const laterForgets = await Promise.all(
      Array.from({ length: 2 }, () => forgotFrom(email, attackerIp, { RATE_LIMITS: "on" })),
    );
    for (const { answer } of [...firstForgets, ...laterForgets]) expect(answer.status).toBe(200);
    // And with an access token stolen from one of the owner's sessions: 40 wrong password re-checks.
    const rechecks = await Promise.all(
      Array.from({ length: 40 }, (_, i) => recheck[recheckNames[i % 3]!](stolen.token, "not my password")),
    );
    expect(tally(rechecks)).toEqual({ 401: 40 });

    // What the attacker got: the address's 10 password checks, 5 on the stolen session (which is over),
    // at most 5 tries at each code their own requests had mailed, and at most 2 of the owner's reset mails.
    expect((await loginFrom(email, PASSWORD)).status).toBe(429);
    expect(await sessionFailures(stolen.token)).toBeNull();
    const rechecked = await Promise.all(rechecks.map((response) => response.text()));
    expect(rechecked.filter((body) => body === AuthMessage.wrongPassword)).toHaveLength(5);
    const attackerMails = await resetMailCodes(email);
    expect(attackerMails.length).toBeLessThanOrEqual(2);
    const tries = await triesOf([...attackerIds, ...laterForgets.map(({ requestId }) => requestId)]);
    const triedCodes = tries.filter((count) => count !== null);
    expect(triedCodes).toHaveLength(attackerMails.length);
    expect(triedCodes.every((count) => count! <= 5)).toBe(true);

    // The owner: logs in from the device that logged in before...
    const again = await loggedIn(email, ownersDevice);
    expect((await me(again.token)).status).toBe(200);
    // ...still passes the password re-check from a live session (changing to the current address is
    // refused only after the check)...
    expect(
      await textOf(
        await call("POST", "/auth/change-email", { password: PASSWORD, new_email: email }, bearer(ownersSession)),
      ),
    ).toEqual({
      status: 400,
      type: TEXT,
      body: "The new email is the current one.",
    });
    // ...and resets with the code they asked for, from their own connection.
    const owner = await forgotFrom(email, randomIp());
    const codes = await resetMailCodes(email);
    expect(codes).toHaveLength(attackerMails.length + 1);
    expect(await textOf(await resetWith(email, owner.requestId, codes.at(-1)!))).toEqual({
      status: 200,
      type: TEXT,
      body: AuthMessage.passwordReset,
    });
    expect(await textOf(await loginFrom(email, PASSWORD, ownersDevice))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
    expect((await loginFrom(email, NEW_PASSWORD, ownersDevice)).status).toBe(200);
    expect((await loginFrom(email, NEW_PASSWORD)).status).toBe(200);
  });
});

describe("the hourly clean-up of what these limits keep", () => {
  it("deletes device runs nobody has added to for a day, expired reset requests and allowances whose hour is over, and nothing live", async () => {
    const email = await verifiedAccount();
    const { device_token: staleDevice } = await loggedIn(email);
    const { device_token: liveDevice } = await loggedIn(email);
    for (const device of [staleDevice, liveDevice])
      expect((await loginFrom(email, "wrong password", device)).status).toBe(401);
    await env.DB.prepare("UPDATE device_login_failures SET last_attempt_at = ? WHERE device_id = ?")
      .bind(Date.now() - DAY - 60_000, deviceIdOf(staleDevice))
      .run();
    const expired = await forgotFrom(email, randomIp());
    const live = await forgotFrom(email, randomIp());
    await env.DB.prepare("UPDATE reset_requests SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1, expired.requestId)
      .run();
    await env.DB.prepare("UPDATE reset_mail_allowances SET window_start = ? WHERE email = ? AND client <> '*'")
      .bind(Date.now() - 2 * 60 * 60_000, email)
      .run();

    await fireCron();
    expect(await deviceRow(staleDevice)).toBeNull();
    expect(await deviceRow(liveDevice)).toMatchObject({ failures: 1 });
    expect(await triesOf([expired.requestId, live.requestId])).toEqual([null, 0]);
    expect(
      await env.DB.prepare("SELECT client FROM reset_mail_allowances WHERE email = ?").bind(email).all(),
    ).toMatchObject({ results: [{ client: "*" }] });
  });
});
