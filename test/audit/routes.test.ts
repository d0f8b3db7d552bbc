/** Reading the audit log (src/audit/routes.ts): GET /auth/activity for the caller, GET /admin/audit for operators. */
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { AuthMessage } from "../../src/auth/messages";
import { AuditMessage, EventPage } from "../../src/audit/shapes";
import { account, bearer, logIn, postLogin, storedUser } from "../support/accounts";
import { admin, userIdOf } from "../support/admin";
import { eventsOf } from "../support/audit";
import { call, JSON_TYPE, PASSWORD, randomEmail, TEXT, textOf } from "../support/app";
import { mailedCode } from "../support/mail";

const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
const EVENT_ID = expect.stringMatching(/^evt_[0-9a-f]{32}$/);

/** A page of events, checked against the shape /openapi.json publishes for it. */
const pageOf = async (response: Response) => v.parse(EventPage, await response.json());

function activity(token: string, query = ""): Promise<Response> {
  return call("GET", `/auth/activity${query}`, undefined, bearer(token));
}

/** Every page of a list, following next_cursor. */
async function allPages(
  first: string,
  get: (path: string) => Promise<Response>,
): Promise<v.InferOutput<typeof EventPage>["events"]> {
  const events: v.InferOutput<typeof EventPage>["events"] = [];
  let path: string | null = first;
  while (path !== null) {
    const response = await get(path);
    expect(response.status).toBe(200);
    const page = await pageOf(response);
    events.push(...page.events);
    path = page.next_cursor === null ? null : `${first}&cursor=${page.next_cursor}`;
  }
  return events;
}

describe("GET /auth/activity", () => {
  it("answers the caller's own events, newest first, each as the log has it", async () => {
    const email = randomEmail();
    expect(
      (await call("POST", "/auth/register", { email, password: PASSWORD }, { "User-Agent": "Reg/1" })).status,
    ).toBe(201);
    const { createdAt } = (await storedUser(email))!;
    expect((await call("POST", "/auth/verify-email", { email, token: await mailedCode(email) })).status).toBe(200);
    const tokens = await logIn(email);
    const id = await userIdOf(email);
    const response = await activity(tokens.token);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(await response.json()).toEqual({
      events: [
        {
          id: EVENT_ID,
          type: "user.signed_in",
          user_id: id,
          actor: "user",
          at: ISO,
          ip: null,
          user_agent: null,
          data: { amr: ["pwd"], session_id: expect.any(String) },
        },
        {
          id: EVENT_ID,
          type: "user.verified",
          user_id: id,
          actor: "user",
          at: ISO,
          ip: null,
          user_agent: null,
          data: { email },
        },
        {
          id: EVENT_ID,
          type: "user.registered",
          user_id: id,
          actor: "user",
          at: new Date(createdAt).toISOString(),
          ip: null,
          user_agent: "Reg/1",
          data: { email, method: "password" },
        },
      ],
      next_cursor: null,
    });
  });

  it("never shows another account's events, nor a deleted account's that had the same id", async () => {
    const gone = await account();
    const goneId = await userIdOf(gone);
    const goneTokens = await logIn(gone);
    expect((await call("DELETE", "/auth/account", { password: PASSWORD }, bearer(goneTokens.token))).status).toBe(204);
    // The next account may be given the deleted one's id (docs/design.md): it sees only its own events.
    const email = await account();
    const tokens = await logIn(email);
    const other = await account();
    await logIn(other);
    const events = await allPages("?limit=100", (query) => activity(tokens.token, query));
    expect(new Set(events.map((event) => event.user_id))).toEqual(new Set([await userIdOf(email)]));
    expect(events.map((event) => event.type)).toEqual(["user.signed_in", "user.verified", "user.registered"]);
    expect(goneId).toBeGreaterThan(0);
  });

  it("pages with limit and an opaque cursor, each event once, in order", async () => {
    const email = await account();
    for (let i = 0; i < 4; i++) await logIn(email);
    const tokens = await logIn(email);
    const paged = await allPages("?limit=2", (query) => activity(tokens.token, query));
    const { events: whole } = await pageOf(await activity(tokens.token, "?limit=100"));
    expect(paged).toEqual(whole);
    expect(whole).toHaveLength(7);
    expect(whole.map((event) => event.id)).toEqual(
      [...(await eventsOf(await userIdOf(email)))].reverse().map((e) => e.id),
    );
  });

  it("answers 401 plain text without a live session", async () => {
    const unauthorized = { status: 401, type: TEXT, body: AuthMessage.invalidAccessToken };
    expect(await textOf(await call("GET", "/auth/activity"))).toEqual(unauthorized);
    const tokens = await logIn(await account());
    expect((await call("POST", "/auth/logout", undefined, bearer(tokens.token))).status).toBe(204);
    expect(await textOf(await activity(tokens.token))).toEqual(unauthorized);
  });

  it.each([
    ["?limit=0", "limit must be an integer from 1 to 100."],
    ["?limit=1e2", "limit must be an integer from 1 to 100."],
    ["?cursor=%2F%2F", "Invalid cursor."],
  ])("answers %s with a plain-text 400", async (query, message) => {
    const tokens = await logIn(await account());
    expect(await textOf(await activity(tokens.token, query))).toEqual({ status: 400, type: TEXT, body: message });
  });

  it("answers another method with 405 and Allow", async () => {
    const response = await call("POST", "/auth/activity", {});
    expect(await textOf(response)).toEqual({ status: 405, type: TEXT, body: "Method not allowed" });
    expect(response.headers.get("allow")).toBe("GET");
  });
});

describe("GET /admin/audit", () => {
  it("lists every account's events newest first, narrowed by user_id and type, in pages", async () => {
    const email = await account();
    const id = await userIdOf(email);
    await logIn(email);
    expect((await postLogin(email, "not the password")).status).toBe(401);
    const mine = await allPages(`/admin/audit?user_id=${id}&limit=2`, (path) => admin("GET", path));
    expect(mine.map((event) => event.type)).toEqual(
      expect.arrayContaining(["user.signed_in", "user.verified", "user.registered"]),
    );
    expect(mine.every((event) => event.user_id === id)).toBe(true);
    const signIns = await allPages(`/admin/audit?user_id=${id}&type=user.signed_in`, (path) => admin("GET", path));
    expect(signIns).toEqual([expect.objectContaining({ type: "user.signed_in", user_id: id, actor: "user" })]);
    const response = await admin("GET", "/admin/audit?limit=1");
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(await response.json()).toEqual({
      events: [expect.objectContaining({ id: EVENT_ID })],
      next_cursor: expect.any(String),
    });
  });

  it.each([
    ["user_id=0", AuditMessage.userId],
    ["user_id=abc", AuditMessage.userId],
    ["type=user.exploded", AuditMessage.type],
    ["limit=101", "limit must be an integer from 1 to 100."],
    ["cursor=abc", "Invalid cursor."],
  ])("answers %s with a JSON 400", async (query, message) => {
    const response = await admin("GET", `/admin/audit?${query}`);
    expect({
      status: response.status,
      type: response.headers.get("content-type"),
      body: await response.json(),
    }).toEqual({
      status: 400,
      type: JSON_TYPE,
      body: { error: message },
    });
  });
});
