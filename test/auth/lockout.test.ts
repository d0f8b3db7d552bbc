import { env } from "cloudflare:workers";
import { decodeJwt } from "jose";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { issueDeviceToken } from "../../src/auth/devices";
import { bearer, call, JSON_TYPE, jsonOf, logIn, me, PASSWORD, randomEmail, storedUser, tally, TEXT, textOf, verifiedAccount } from "../helpers";

/**
 * The limits an attacker who knows only an address runs into, and that they cannot turn against the
 * address's owner: each rule one at a time and under a concurrent burst (every request launched before
 * any answer is read), and at the end the whole lock-out script replayed against one owner.
 */

const DAY = 24 * 60 * 60 * 1000;
const LOGIN_LOCKED = "Too many failed login attempts. Please try again later.";
const INVALID_CREDENTIALS = "Invalid email or password.";
const WRONG_PASSWORD = "Invalid password.";
const INVALID_ACCESS = "Invalid or expired access token.";
const NEW_PASSWORD = "a brand new passphrase";

const LoginAnswer = v.strictObject({
  token: v.string(),
  refresh_token: v.string(),
  expires_in: v.literal(3600),
  device_token: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{22}\.[0-9]+\.[A-Za-z0-9_-]{43}$/)),
});
type LoginAnswer = v.InferOutput<typeof LoginAnswer>;

function loginFrom(email: string, password: string, deviceToken?: unknown): Promise<Response> {
  return call("POST", "/auth/login", deviceToken === undefined ? { email, password } : { email, password, device_token: deviceToken });
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
  return env.DB.prepare("SELECT lockedUntil FROM login_failures WHERE email = ?").bind(email).first<number>("lockedUntil");
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
    expect(await textOf(await loginFrom(email, PASSWORD))).toEqual({ status: 429, type: TEXT, body: LOGIN_LOCKED });

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
    expect(await textOf(responses.find((response) => response.status === 401)!)).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
    const refused = responses.find((response) => response.status === 429)!;
    expect(await textOf(refused)).toEqual({ status: 429, type: TEXT, body: LOGIN_LOCKED });
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
    ["a token whose expiry is pushed back", (token: string) => token.replace(/\.([0-9]+)\./, (_match, expiry: string) => `.${Number(expiry) + 1}.`)],
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
    expect(await textOf(await loginFrom(email, PASSWORD, spoilt))).toEqual({ status: 429, type: TEXT, body: LOGIN_LOCKED });
  });

  it("counts an expired token for nothing", async () => {
    const email = await verifiedAccount();
    const expired = await issueDeviceToken(env.JWT_SECRET_KEY, email, Date.now() - 181 * DAY);
    expect(tally(await wrongLogins(email, 11, expired))).toEqual({ 401: 10, 429: 1 });
    expect((await loginFrom(email, PASSWORD, expired)).status).toBe(429);
  });

  it("answers a login without device_token as before, with device_token added to the 200", async () => {
    const email = await verifiedAccount();
    const response = await loginFrom(email, PASSWORD);
    const body = await jsonOf(response);
    expect(body).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: { token: expect.any(String), refresh_token: expect.any(String), expires_in: 3600, device_token: expect.any(String) },
    });
    expect(await textOf(await loginFrom(randomEmail(), PASSWORD))).toEqual({ status: 401, type: TEXT, body: INVALID_CREDENTIALS });
  });
});

/** The three endpoints that check the caller's password again, each sent with `password`. */
const recheck = {
  "change-password": (token: string, password: string) =>
    call("POST", "/auth/change-password", { current_password: password, new_password: NEW_PASSWORD }, bearer(token)),
  "change-email": (token: string, password: string) => call("POST", "/auth/change-email", { password, new_email: randomEmail("new") }, bearer(token)),
  "delete-account": (token: string, password: string) => call("DELETE", "/auth/account", { password }, bearer(token)),
};
const recheckNames = Object.keys(recheck) as Array<keyof typeof recheck>;

async function sessionFailures(token: string): Promise<number | null> {
  return env.DB.prepare("SELECT password_failures FROM sessions WHERE id = ?").bind(String(decodeJwt(token).sid)).first<number>("password_failures");
}

describe("password re-checks of a session (change-password, change-email, delete-account)", () => {
  it.each(recheckNames)("%s: of 40 wrong passwords sent together, 5 are checked and the session ends; the rest of the account is untouched", async (name) => {
    const email = await verifiedAccount();
    const { token } = await logIn(email);
    const other = await logIn(email);

    const responses = await Promise.all(Array.from({ length: 40 }, () => recheck[name](token, "not my password")));
    expect(tally(responses)).toEqual({ 401: 40 });
    const bodies = await Promise.all(responses.map((response) => response.text()));
    expect(bodies.filter((body) => body === WRONG_PASSWORD)).toHaveLength(5);
    expect(bodies.filter((body) => body === INVALID_ACCESS)).toHaveLength(35);

    // That session is over, the right password included; the owner's other session and the address's
    // login are as they were, and nothing was changed.
    expect(await textOf(await recheck[name](token, PASSWORD))).toEqual({ status: 401, type: TEXT, body: INVALID_ACCESS });
    expect((await me(token)).status).toBe(401);
    expect((await me(other.token)).status).toBe(200);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM login_failures WHERE email = ?").bind(email).first("n")).toBe(0);
    expect((await loginFrom(email, PASSWORD)).status).toBe(200);
    expect(await storedUser(email)).not.toBeNull();
  });

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
    const sameAddress = () => call("POST", "/auth/change-email", { password: PASSWORD, new_email: email }, bearer(token));
    for (let i = 0; i < 3; i++) expect((await sameAddress()).status).toBe(400);
    expect(await sessionFailures(token)).toBe(4);
    // The fifth wrong one ends it.
    expect(await textOf(await recheck["change-email"](token, "not my password"))).toEqual({ status: 401, type: TEXT, body: WRONG_PASSWORD });
    expect(await sessionFailures(token)).toBeNull();
  });
});
