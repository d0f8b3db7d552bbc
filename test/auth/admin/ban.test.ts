/**
 * Bans (POST /admin/users/{id}/ban and /unban): every session ends at once, every way in is refused while the ban
 * holds, decided in the very statement that would open a session (src/auth/core/gate.ts), bursts included.
 */
import { describe, expect, it } from "vitest";
import * as v from "valibot";
import { AuthMessage } from "../../../src/auth/messages";
import { BanMessage } from "../../../src/auth/admin/shapes";
import { AdminMessage } from "../../../src/lib/admin";
import { CLOSE_SESSION_ENDED, SESSION_ENDED_REASON } from "../../../src/live/protocol";
import {
  account,
  bearer,
  expectEnded,
  heldLogin,
  logIn,
  me,
  postLogin,
  refresh,
  setUser,
  type Tokens,
} from "../../support/accounts";
import { admin, userIdOf } from "../../support/admin";
import { eventsOf, eventually } from "../../support/audit";
import { call, count, JSON_TYPE, PASSWORD, tally, TEXT, textOf, within } from "../../support/app";
import { openLive } from "../../support/live";
import {
  exchangeLoginCode,
  identityClaims,
  idTokenSignIn,
  signedIdToken,
  socialLogIn,
  webSignIn,
} from "../../support/oauth";
import { registeredPasskey, signIn as passkeySignIn, totpCode, turnOnTotp } from "../passkeys/support";

const SUSPENDED = { status: 403, type: TEXT, body: AuthMessage.accountSuspended };
const FOREVER = "9999-12-31T23:59:59.999Z";

function ban(userId: number, body: unknown = { until: null, reason: "Spam" }) {
  return admin("POST", `/admin/users/${userId}/ban`, body, {
    "CF-Connecting-IP": "203.0.113.77",
    "User-Agent": "ops-cli/1",
  });
}

async function json(response: Response) {
  return { status: response.status, type: response.headers.get("content-type"), body: await response.json() };
}

describe("POST /admin/users/{id}/ban", () => {
  it("answers the account, ends its sessions and sockets at once, refuses its password, and records the ban", async () => {
    const email = await account();
    const id = await userIdOf(email);
    const tokens = await logIn(email);
    const live = await openLive(tokens.token);
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const response = await ban(id, { until, reason: "Chargeback fraud" });
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(await json(response)).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: expect.objectContaining({ id, email, banned_until: until }),
    });
    await expectEnded(tokens);
    const closed = await within(live.closed, 3_000);
    expect(closed).toEqual({ code: CLOSE_SESSION_ENDED, reason: SESSION_ENDED_REASON, at: expect.any(Number) });
    expect(await textOf(await postLogin(email))).toEqual(SUSPENDED);
    expect(await textOf(await postLogin(email, "a wrong password"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidCredentials,
    });
    const [banned] = await eventsOf(id, "user.banned");
    expect(banned).toMatchObject({
      actor: "admin",
      ip: "203.0.113.0/24",
      user_agent: "ops-cli/1",
      data: { until, reason: "Chargeback fraud" },
    });
    const failed = await eventually(async () =>
      (await eventsOf(id, "user.sign_in_failed")).find((e) => e.data.reason === "suspended"),
    );
    expect(failed).toMatchObject({ actor: "user", data: { reason: "suspended", amr: ["pwd"] } });
  });

  it("bans until an unban with `until: null`, shown as the last millisecond of 9999", async () => {
    const email = await account();
    const { body } = await json(await ban(await userIdOf(email)));
    expect(body).toMatchObject({ banned_until: FOREVER });
    expect(await textOf(await postLogin(email))).toEqual(SUSPENDED);
  });

  it("refuses every way in: a second step begun before, a passkey, a social sign-in (web and native), a refresh", async () => {
    const email = await account();
    const id = await userIdOf(email);
    const first = await logIn(email);
    const { passkey } = await registeredPasskey(first.token);
    const secret = await turnOnTotp(first.token);
    const step = await postLogin(email);
    const { mfa_token: mfaToken } = v.parse(v.object({ mfa_token: v.string() }), await step.json());
    const claims = identityClaims();
    const social = await socialLogIn("google", claims);
    const socialId = await userIdOf(String(claims.email));
    const pending = await webSignIn("google", { claims });

    expect((await ban(id)).status).toBe(200);
    expect((await ban(socialId)).status).toBe(200);
    // The next step's code: the current one confirmed the factor.
    const code = await totpCode(secret, 1);
    expect(await textOf(await call("POST", "/auth/mfa/verify", { mfa_token: mfaToken, code }))).toEqual(SUSPENDED);
    expect(await textOf(await passkeySignIn(passkey))).toEqual(SUSPENDED);
    expect(await textOf(await exchangeLoginCode(pending.app.searchParams.get("code"), pending.verifier))).toEqual(
      SUSPENDED,
    );
    expect(
      await textOf(
        await idTokenSignIn("google", {
          id_token: await signedIdToken("google", { ...claims, aud: "google-web-client" }),
        }),
      ),
    ).toEqual(SUSPENDED);
    // Refresh tokens of the sessions the ban ended: 401, as every token of an ended session.
    await expectEnded(first);
    await expectEnded(social);
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id IN (?, ?)", id, socialId)).toBe(0);
  }, 30_000);

  it("refuses a login whose password was checked before the ban and whose session comes after it", async () => {
    const email = await account();
    const id = await userIdOf(email);
    // The login is stopped between its checks (the password is right) and its session's INSERT.
    const held = await heldLogin(email);
    expect((await ban(id)).status).toBe(200);
    expect(await textOf(await held.release())).toEqual(SUSPENDED);
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", id)).toBe(0);
    expect(await eventsOf(id, "user.signed_in")).toEqual([]);
  });

  it("leaves no way in to a burst of requests from the account's sessions launched together with the ban", async () => {
    const email = await account();
    const id = await userIdOf(email);
    const sessions = await Promise.all(Array.from({ length: 4 }, () => logIn(email)));
    const requests = sessions.flatMap((tokens) => [
      refresh(tokens.refresh_token),
      me(tokens.token),
      call("POST", "/auth/logout", undefined, bearer(tokens.token)),
      postLogin(email),
      postLogin(email),
      call("GET", "/auth/sessions", undefined, bearer(tokens.token)),
      call(
        "POST",
        "/auth/change-password",
        { current_password: PASSWORD, new_password: "another long password" },
        bearer(tokens.token),
      ),
    ]);
    const [banned, ...answers] = await Promise.all([ban(id), ...requests]);
    expect(banned.status).toBe(200);
    // Whatever each request got, nothing it got still opens anything once the ban has committed.
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", id)).toBe(0);
    const issued: Tokens[] = [...sessions];
    for (const answer of answers) {
      if (answer.status !== 200 || answer.headers.get("content-type") !== JSON_TYPE) continue;
      const body: unknown = await answer.json();
      if (v.is(v.object({ token: v.string(), refresh_token: v.string(), expires_in: v.number() }), body))
        issued.push(body);
    }
    for (const tokens of issued) await expectEnded(tokens);
    expect(tally(await Promise.all([postLogin(email), postLogin(email)]))).toEqual({ 403: 2 });
    // Every session the burst opened was opened before the ban: each `user.signed_in` precedes `user.banned`.
    const types = (await eventsOf(id)).map((event) => event.type).filter((type) => type !== "user.sign_in_failed");
    expect(types.lastIndexOf("user.signed_in")).toBeLessThan(types.indexOf("user.banned"));
  });

  it("lets the account in once `until` has passed, and shows no ban any more", async () => {
    const email = await account();
    const id = await userIdOf(email);
    expect((await ban(id, { until: new Date(Date.now() + 60_000).toISOString(), reason: "Cool down" })).status).toBe(
      200,
    );
    expect(await textOf(await postLogin(email))).toEqual(SUSPENDED);
    await setUser(email, { banned_until: Date.now() - 1 });
    expect((await postLogin(email)).status).toBe(200);
    expect((await json(await admin("GET", `/admin/users/${id}`))).body).toMatchObject({ banned_until: null });
  });

  it.each([
    [{ reason: "Spam" }, BanMessage.until],
    [{ until: "tomorrow", reason: "Spam" }, BanMessage.until],
    [{ until: "2030-01-01", reason: "Spam" }, BanMessage.until],
    [{ until: 1893456000000, reason: "Spam" }, BanMessage.until],
    [{ until: "2001-01-01T00:00:00Z", reason: "Spam" }, BanMessage.untilPast],
    [{ until: null }, BanMessage.reason],
    [{ until: null, reason: "   " }, BanMessage.reason],
    [{ until: null, reason: "x".repeat(501) }, BanMessage.reason],
    ["[1]", "Request body must be a JSON object."],
  ])("answers %j with a JSON 400 and bans nothing", async (body, message) => {
    const email = await account();
    expect(await json(await ban(await userIdOf(email), body))).toEqual({
      status: 400,
      type: JSON_TYPE,
      body: { error: message },
    });
    expect((await postLogin(email)).status).toBe(200);
  });

  it("answers 404 for an unknown account and 400 for a malformed id", async () => {
    expect(await json(await ban(99999997))).toEqual({
      status: 404,
      type: JSON_TYPE,
      body: { error: AdminMessage.userNotFound },
    });
    expect((await admin("POST", "/admin/users/x/ban", { until: null, reason: "r" })).status).toBe(400);
  });
});

describe("POST /admin/users/{id}/unban", () => {
  it("lets the account in again and records user.unbanned, once", async () => {
    const email = await account();
    const id = await userIdOf(email);
    expect((await ban(id)).status).toBe(200);
    const response = await admin("POST", `/admin/users/${id}/unban`);
    expect(await json(response)).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: expect.objectContaining({ id, banned_until: null }),
    });
    expect((await postLogin(email)).status).toBe(200);
    // Unbanning an account that is not banned changes and records nothing.
    expect((await admin("POST", `/admin/users/${id}/unban`)).status).toBe(200);
    expect(await eventsOf(id, "user.unbanned")).toEqual([expect.objectContaining({ actor: "admin" })]);
  });

  it("answers 404 for an unknown account", async () => {
    expect(await json(await admin("POST", "/admin/users/99999996/unban"))).toEqual({
      status: 404,
      type: JSON_TYPE,
      body: { error: AdminMessage.userNotFound },
    });
  });
});

describe("POST /admin/users/{id}/sign-out", () => {
  it("closes the account's live sockets with 4001", async () => {
    const email = await account();
    const live = await openLive((await logIn(email)).token);
    expect((await admin("POST", `/admin/users/${await userIdOf(email)}/sign-out`)).status).toBe(204);
    expect(await within(live.closed, 3_000)).toEqual({
      code: CLOSE_SESSION_ENDED,
      reason: SESSION_ENDED_REASON,
      at: expect.any(Number),
    });
  });
});
