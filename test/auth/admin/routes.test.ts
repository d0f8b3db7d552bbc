/** The admin API's accounts (src/auth/admin/routes.ts): list, read, sign out, delete. Bans: ban.test.ts. */
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { AdminUserDetail, AdminUserPage } from "../../../src/auth/admin/shapes";
import { AdminMessage } from "../../../src/lib/admin";
import { account, bearer, expectEnded, logIn, postLogin, storedUser } from "../../support/accounts";
import { admin, userIdOf } from "../../support/admin";
import { eventsOf, eventsOfDeleted } from "../../support/audit";
import { callWithEnv, count, JSON_TYPE, PASSWORD, randomEmail } from "../../support/app";
import { PRIVATE_NOTES } from "../../support/notes";
import { registeredPasskey, turnOnTotp } from "../passkeys/support";
import { identityClaims, socialLogIn } from "../../support/oauth";

const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

async function json(response: Response) {
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    cache: response.headers.get("cache-control"),
    body: await response.json(),
  };
}

const error = (status: number, message: string) => ({
  status,
  type: JSON_TYPE,
  cache: "no-store",
  body: { error: message },
});

describe("GET /admin/users", () => {
  it("lists an account with every field, by exact address", async () => {
    const email = await account();
    const id = await userIdOf(email);
    const { createdAt } = (await storedUser(email))!;
    expect(await json(await admin("GET", `/admin/users?email=${encodeURIComponent(email)}`))).toEqual({
      status: 200,
      type: JSON_TYPE,
      cache: "no-store",
      body: {
        users: [
          {
            id,
            email,
            verified: true,
            created_at: new Date(createdAt).toISOString(),
            banned_until: null,
            has_password: true,
            mfa: false,
            passkeys: 0,
            identities: [],
            last_sign_in_at: null,
          },
        ],
        next_cursor: null,
      },
    });
  });

  it("shows a social sign-in's account: no password, its provider, its passkey, its last sign-in", async () => {
    const claims = identityClaims();
    const tokens = await socialLogIn("google", claims);
    const email = String(claims.email);
    await registeredPasskey(tokens.token);
    const { body } = await json(await admin("GET", `/admin/users?email=${encodeURIComponent(email)}`));
    expect(body).toEqual({
      users: [
        expect.objectContaining({
          email,
          verified: true,
          has_password: false,
          passkeys: 1,
          identities: ["google"],
          last_sign_in_at: ISO,
        }),
      ],
      next_cursor: null,
    });
  }, 20_000);

  it("shows two-factor authentication once it is on", async () => {
    const email = await account();
    await turnOnTotp((await logIn(email)).token);
    const { body } = await json(await admin("GET", `/admin/users?email=${encodeURIComponent(email)}`));
    expect(body).toMatchObject({ users: [{ email, mfa: true, has_password: true }] });
  });

  it("finds accounts by the start of their address (trimmed, any case), in pages by id with an opaque cursor", async () => {
    const prefix = `prefix-${crypto.randomUUID()}`;
    const emails = [];
    for (let i = 0; i < 5; i++) {
      const email = randomEmail(prefix);
      expect(
        (await callWithEnv({ MAIL_EMAIL: " " }, "POST", "/auth/register", { email, password: PASSWORD })).status,
      ).toBe(201);
      emails.push(email);
    }
    const ids = await Promise.all(emails.map(userIdOf));
    const seen: number[] = [];
    let cursor: string | null = null;
    const query = `email=${encodeURIComponent(` ${prefix.toUpperCase()}`)}&limit=2`;
    do {
      const response = await admin("GET", `/admin/users?${query}${cursor ? `&cursor=${cursor}` : ""}`);
      const page = v.parse(AdminUserPage, await response.json());
      expect(page.users.length).toBeLessThanOrEqual(2);
      seen.push(...page.users.map((user) => user.id));
      cursor = page.next_cursor;
    } while (cursor !== null);
    expect(seen).toEqual([...ids].sort((a, b) => a - b));
  });

  it.each([
    ["limit=0", "limit must be an integer from 1 to 100."],
    ["limit=101", "limit must be an integer from 1 to 100."],
    ["limit=abc", "limit must be an integer from 1 to 100."],
    ["cursor=nope", "Invalid cursor."],
    [`cursor=${btoa('["1"]')}`, "Invalid cursor."],
    ["email=", "email must be 1 to 254 characters."],
  ])("answers %s with a JSON 400", async (query, message) => {
    expect(await json(await admin("GET", `/admin/users?${query}`))).toEqual(error(400, message));
  });
});

describe("GET /admin/users/{id}", () => {
  it("answers the account with its live sessions, the latest used first", async () => {
    const email = await account();
    const id = await userIdOf(email);
    await logIn(email, { userAgent: "First/1.0" });
    const second = await logIn(email, { userAgent: "Second/2.0" });
    const { body } = await json(await admin("GET", `/admin/users/${id}`));
    expect(body).toMatchObject({ id, email, last_sign_in_at: ISO });
    const { sessions } = v.parse(AdminUserDetail, body);
    expect(sessions).toEqual([
      { id: expect.any(String), created_at: ISO, last_used_at: ISO, amr: ["pwd"], user_agent: expect.any(String) },
      { id: expect.any(String), created_at: ISO, last_used_at: ISO, amr: ["pwd"], user_agent: expect.any(String) },
    ]);
    expect(sessions.map((session) => session.user_agent).sort()).toEqual(["First/1.0", "Second/2.0"]);
    expect(second.token).toBeTruthy();
  });

  it.each([
    ["/admin/users/0", 400, AdminMessage.invalidUserId],
    ["/admin/users/abc", 400, AdminMessage.invalidUserId],
    ["/admin/users/1.5", 400, AdminMessage.invalidUserId],
    ["/admin/users/99999999", 404, AdminMessage.userNotFound],
  ])("answers %s with %i", async (path, status, message) => {
    expect(await json(await admin("GET", path))).toEqual(error(status, message));
  });
});

describe("POST /admin/users/{id}/sign-out", () => {
  it("ends every session at once (tokens 401), records the event, and leaves the account free to sign in", async () => {
    const email = await account();
    const id = await userIdOf(email);
    const [first, second] = [await logIn(email), await logIn(email)];
    const response = await admin("POST", `/admin/users/${id}/sign-out`);
    expect(response.status).toBe(204);
    expect(response.headers.get("cache-control")).toBe("no-store");
    await expectEnded(first);
    await expectEnded(second);
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", id)).toBe(0);
    const [event] = await eventsOf(id, "user.signed_out_by_admin");
    expect(event).toMatchObject({ actor: "admin", data: { session_ids: expect.any(Array) } });
    expect((event!.data.session_ids as string[]).length).toBe(2);
    expect((await postLogin(email)).status).toBe(200);
  });

  it("answers 404 for an unknown account, and records nothing", async () => {
    expect(await json(await admin("POST", "/admin/users/99999998/sign-out"))).toEqual(
      error(404, AdminMessage.userNotFound),
    );
    expect(await eventsOf(99999998)).toEqual([]);
  });
});

describe("DELETE /admin/users/{id}", () => {
  it("deletes the account and everything it owns, as its owner's deletion does, and records user.deleted", async () => {
    const email = await account();
    const id = await userIdOf(email);
    const tokens = await logIn(email);
    const note = await callWithEnv(
      PRIVATE_NOTES,
      "POST",
      "/notes",
      { title: "mine", content: "c" },
      bearer(tokens.token),
    );
    expect(note.status).toBe(201);
    const response = await admin("DELETE", `/admin/users/${id}`);
    expect(response.status).toBe(204);
    expect(await storedUser(email)).toBeNull();
    expect(await count("SELECT count(*) AS n FROM notes WHERE user_id = ?", id)).toBe(0);
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", id)).toBe(0);
    await expectEnded(tokens);
    // Every event of the account is closed with it: a later account given the same id does not see them.
    expect(await eventsOf(id)).toEqual([]);
    const events = await eventsOfDeleted(id);
    expect(events.at(-1)).toMatchObject({ type: "user.deleted", actor: "admin", data: { email }, closed: 1 });
    expect(events.map((event) => event.type)).toEqual([
      "user.registered",
      "user.verified",
      "user.signed_in",
      "user.deleted",
    ]);
    expect(await json(await admin("DELETE", `/admin/users/${id}`))).toEqual(error(404, AdminMessage.userNotFound));
  });
});
