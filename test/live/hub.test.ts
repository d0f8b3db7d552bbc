import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { base32Decode, stepAt, totpAt } from "../../src/lib/totp";
import { CLOSE_SESSION_ENDED, SESSION_ENDED_REASON } from "../../src/live/protocol";
import {
  account,
  bearer,
  confirmEmailChange,
  emailChangeCode,
  logIn,
  NEW_PASSWORD,
  refresh,
  reset,
  resetCode,
  revertTokenMailed,
  sessionIdOf,
  type Tokens,
} from "../support/accounts";
import { call, callWithEnv, PASSWORD, randomEmail, within } from "../support/app";
import { openLive, type LiveSocket } from "../support/live";
import { PRIVATE_NOTES } from "../support/notes";
import { PASSWORD_CHECKS_PER_SESSION } from "../../src/auth/policy";

/**
 * A socket closes with 4001 within 2 s when its session ends, whatever ended it (src/live/hub.ts, told by every
 * session-ending path of the accounts area through `sessionsEnded`, index.ts); the sockets of sessions that
 * go on, and other accounts' sockets, stay open and keep hearing of writes.
 */

/** Expects `live` to close with 4001 within 2 s of `since`. */
async function expectEnded(live: LiveSocket, since: number) {
  const closed = await within(live.closed, 3_000);
  expect(closed).toEqual({ code: CLOSE_SESSION_ENDED, reason: SESSION_ENDED_REASON, at: expect.any(Number) });
  if (closed !== "timeout") expect(closed.at - since).toBeLessThan(2_000);
}

/** Expects `live` still open: it hears of a write made with `token` (of its account). */
async function expectOpen(live: LiveSocket, token: string) {
  const index = live.frames.length;
  expect(
    (await callWithEnv(PRIVATE_NOTES, "POST", "/notes", { title: "Still here?", content: "c" }, bearer(token))).status,
  ).toBe(201);
  expect(JSON.parse((await live.frame(index)) ?? "{}")).toMatchObject({ type: "changed" });
  expect(await within(live.closed, 0)).toBe("timeout");
}

/** An account with two sessions (devices), each with a socket open. */
async function twoDevices() {
  const email = await account();
  const [mine, other] = [await logIn(email), await logIn(email)];
  return { email, mine, other, myLive: await openLive(mine.token), otherLive: await openLive(other.token) };
}

/** Sends with `token`, expecting `status`; answers when the answer came. */
async function sent(status: number, method: string, path: string, body: unknown, token?: string): Promise<number> {
  const response = await call(method, path, body, token ? bearer(token) : {});
  expect(response.status, `${method} ${path}`).toBe(status);
  return Date.now();
}

/** TOTP on for the session of `tokens` (other sessions end): the secret and the recovery codes. */
async function turnTotpOn(tokens: Tokens) {
  const { secret } = (await (
    await call("POST", "/auth/mfa/totp", { password: PASSWORD }, bearer(tokens.token))
  ).json()) as { secret: string };
  const key = base32Decode(secret);
  const confirmed = await call(
    "POST",
    "/auth/mfa/totp/confirm",
    { code: await totpAt(key, stepAt(Date.now())) },
    bearer(tokens.token),
  );
  expect(confirmed.status).toBe(200);
  const { recovery_codes: codes } = (await confirmed.json()) as { recovery_codes: string[] };
  return { key, codes, at: Date.now() };
}

describe("a live socket when its session ends", () => {
  it("closes with 4001 on logout; the account's other sockets stay open", async () => {
    const { mine, other, myLive, otherLive } = await twoDevices();
    await expectEnded(myLive, await sent(204, "POST", "/auth/logout", undefined, mine.token));
    await expectOpen(otherLive, other.token);
  });

  it("closes with 4001 when another session ends it (DELETE /auth/sessions/{id})", async () => {
    const { mine, other, myLive, otherLive } = await twoDevices();
    await expectEnded(
      otherLive,
      await sent(204, "DELETE", `/auth/sessions/${sessionIdOf(other.token)}`, undefined, mine.token),
    );
    await expectOpen(myLive, mine.token);
  });

  it("closes with 4001 when every other session is ended (DELETE /auth/sessions)", async () => {
    const { mine, myLive, otherLive } = await twoDevices();
    await expectEnded(otherLive, await sent(204, "DELETE", "/auth/sessions", undefined, mine.token));
    await expectOpen(myLive, mine.token);
  });

  it("closes with 4001 when the password is changed elsewhere", async () => {
    const { mine, myLive, otherLive } = await twoDevices();
    const changed = await sent(
      200,
      "POST",
      "/auth/change-password",
      { current_password: PASSWORD, new_password: NEW_PASSWORD },
      mine.token,
    );
    await expectEnded(otherLive, changed);
    await expectOpen(myLive, mine.token);
  });

  it("closes every socket with 4001 when the password is reset", async () => {
    const { email, myLive, otherLive } = await twoDevices();
    const code = await resetCode(email);
    const done = Date.now();
    expect((await reset(email, code)).status).toBe(200);
    await expectEnded(myLive, done);
    await expectEnded(otherLive, done);
  });

  it("closes with 4001 when the e-mail address is changed elsewhere, and every socket when the change is undone", async () => {
    const { email, mine, myLive, otherLive } = await twoDevices();
    const code = await emailChangeCode(email, mine.token, randomEmail("new"));
    const switched = Date.now();
    expect((await confirmEmailChange(mine.token, code)).status).toBe(200);
    await expectEnded(otherLive, switched);
    await expectOpen(myLive, mine.token);

    await expectEnded(
      myLive,
      await sent(200, "POST", "/auth/revert-email-change", { token: await revertTokenMailed(email) }),
    );
  });

  it("closes with 4001 when two-factor authentication is turned on elsewhere (other sessions end)", async () => {
    const { mine, myLive, otherLive } = await twoDevices();
    const { at } = await turnTotpOn(mine);
    await expectEnded(otherLive, at);
    await expectOpen(myLive, mine.token);
  });

  it("closes with 4001 when the second factor is removed elsewhere", async () => {
    const email = await account();
    const mine = await logIn(email);
    const { key, codes } = await turnTotpOn(mine);
    // A second device signs in with the next step's code, then the first removes the factor with a recovery code.
    const { mfa_token: mfaToken } = (await (
      await call("POST", "/auth/login", { email, password: PASSWORD })
    ).json()) as { mfa_token: string };
    const verified = await call("POST", "/auth/mfa/verify", {
      mfa_token: mfaToken,
      code: await totpAt(key, stepAt(Date.now()) + 1),
    });
    expect(verified.status).toBe(200);
    const other = (await verified.json()) as Tokens;
    const [myLive, otherLive] = [await openLive(mine.token), await openLive(other.token)];
    await expectEnded(
      otherLive,
      await sent(204, "DELETE", "/auth/mfa/totp", { password: PASSWORD, code: codes[0] }, mine.token),
    );
    await expectOpen(myLive, mine.token);
  });

  it("closes every socket with 4001 when the account is deleted", async () => {
    const { mine, myLive, otherLive } = await twoDevices();
    const deleted = await sent(204, "DELETE", "/auth/account", { password: PASSWORD }, mine.token);
    await expectEnded(myLive, deleted);
    await expectEnded(otherLive, deleted);
  });

  it("closes with 4001 when a reused refresh token revokes the session", async () => {
    const { mine, other, myLive, otherLive } = await twoDevices();
    const first = (await (await refresh(mine.refresh_token)).json()) as Tokens;
    expect((await refresh(first.refresh_token)).status).toBe(200);
    // The token of two rotations ago: a copy in someone else's hands, and the session is revoked.
    const revoked = Date.now();
    expect((await refresh(mine.refresh_token)).status).toBe(401);
    await expectEnded(myLive, revoked);
    await expectOpen(otherLive, other.token);
  });

  it(`closes with 4001 when ${PASSWORD_CHECKS_PER_SESSION} wrong password checks end the session`, async () => {
    const { mine, other, myLive, otherLive } = await twoDevices();
    let last = 0;
    for (let i = 0; i < PASSWORD_CHECKS_PER_SESSION; i++) {
      last = await sent(
        401,
        "POST",
        "/auth/change-password",
        { current_password: "wrong password", new_password: NEW_PASSWORD },
        mine.token,
      );
    }
    await expectEnded(myLive, last);
    await expectOpen(otherLive, other.token);
  });

  it("closes with 4001 when the session runs out, unless a refresh extended it", async () => {
    const email = await account();
    const [short, extended] = [await logIn(email), await logIn(email)];
    const endsAt = Date.now() + 1_500;
    for (const tokens of [short, extended]) {
      await env.DB.prepare("UPDATE sessions SET expires_at = ? WHERE id = ?")
        .bind(endsAt, sessionIdOf(tokens.token))
        .run();
    }
    const [shortLive, extendedLive] = [await openLive(short.token), await openLive(extended.token)];
    const renewed = (await (await refresh(extended.refresh_token)).json()) as Tokens;
    const closed = await within(shortLive.closed, 5_000);
    expect(closed).toEqual({ code: CLOSE_SESSION_ENDED, reason: SESSION_ENDED_REASON, at: expect.any(Number) });
    // Closed by the hub's alarm once the session's end had passed, not before it.
    if (closed !== "timeout") expect(closed.at).toBeGreaterThanOrEqual(endsAt);
    await expectOpen(extendedLive, renewed.token);
  });

  it("leaves other accounts' sockets open", async () => {
    const { mine, myLive } = await twoDevices();
    const stranger = await logIn(await account());
    const strangerLive = await openLive(stranger.token);
    await expectEnded(myLive, await sent(204, "POST", "/auth/logout", undefined, mine.token));
    await expectOpen(strangerLive, stranger.token);
  });
});
