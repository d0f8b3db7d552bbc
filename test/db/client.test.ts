import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { requestSession } from "../../src/db/client";
import { bearer, logIn, verifiedAccount } from "../support/accounts";
import { call, callWithEnv, JSON_TYPE, jsonOf, TEXT, textOf } from "../support/app";

/** D1 read replication: every request runs in a D1 session, and the client carries the bookmark. */

const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

function bookmarkOf(response: Response): string {
  const bookmark = response.headers.get("x-d1-bookmark");
  expect(bookmark).toMatch(BOOKMARK);
  return bookmark!;
}

describe("X-D1-Bookmark", () => {
  it("comes with every answer that used the database, in both areas, errors included", async () => {
    const email = await verifiedAccount();
    const { token } = await logIn(email);
    const created = await call("POST", "/notes", { title: "t", content: "c" });
    const { id } = (await created.clone().json()) as { id: number };
    for (const response of [
      created,
      await call("GET", "/notes"),
      await call("GET", `/notes/${id}`),
      await call("GET", "/notes/999999999"),
      await call("PATCH", `/notes/${id}`, { content: "d" }),
      await call("POST", "/auth/login", { email, password: "wrong password" }),
      await call("GET", "/auth/me", undefined, bearer(token)),
    ]) {
      bookmarkOf(response);
    }
  });

  it("is accepted back: the next request reads at least that recent a copy, and answers a bookmark no older", async () => {
    const created = await call("POST", "/notes", { title: "mine", content: "just written" });
    const written = bookmarkOf(created);
    const { id } = (await created.json()) as { id: number };

    const read = await call("GET", `/notes/${id}`, undefined, { "X-D1-Bookmark": written });
    expect(await jsonOf(read.clone())).toMatchObject({ status: 200, body: { id, content: "just written" } });
    // Bookmarks sort in the order of the database's history.
    expect(bookmarkOf(read) >= written).toBe(true);
  });

  it.each([
    "nonsense",
    "00000000-00000008-00000000",
    "00000000-00000008-00000000-00000000000000000000000000000000x",
    "ABCDEF00-00000008-00000000-00000000000000000000000000000000",
  ])("answers 400 in the area's format for a malformed bookmark (%s), before anything is written", async (bad) => {
    const title = `bookmark-${crypto.randomUUID()}`;
    const notes = await call("POST", "/notes", { title, content: "c" }, { "X-D1-Bookmark": bad });
    expect(await jsonOf(notes)).toEqual({
      status: 400,
      type: JSON_TYPE,
      body: { error: "Invalid X-D1-Bookmark header" },
    });
    expect(await env.DB.prepare("SELECT count(*) AS n FROM notes WHERE title = ?").bind(title).first("n")).toBe(0);

    const auth = await call("POST", "/auth/login", { email: "a@example.com", password: "x" }, { "X-D1-Bookmark": bad });
    expect(await textOf(auth)).toEqual({ status: 400, type: TEXT, body: "Invalid X-D1-Bookmark header." });
  });

  it("is never the client's own value handed back when the database was not asked", async () => {
    const held = bookmarkOf(await call("POST", "/notes", { title: "t", content: "c" }));
    // Refused before any query: no bookmark, so the client keeps the one it holds.
    const refused = await call("POST", "/notes", { title: 42, content: "c" }, { "X-D1-Bookmark": held });
    expect(refused.status).toBe(400);
    expect(refused.headers.get("x-d1-bookmark")).toBeNull();
  });

  it("serves a well-formed bookmark ahead of the database (forged, or from before a restore) without failing", async () => {
    const ahead = `7fffffff-ffffffff-ffffffff-${"f".repeat(32)}`;
    const read = await call("GET", "/notes?limit=1", undefined, { "X-D1-Bookmark": ahead });
    expect(read.status).toBe(200);
    // Whatever the database reports is passed on (the local runtime reports the client's value back).
    bookmarkOf(read);
    const written = await call("POST", "/notes", { title: "t", content: "c" }, { "X-D1-Bookmark": ahead });
    expect(written.status).toBe(201);
  });

  it("is exposed to browsers of allowed origins, and may be sent by them", async () => {
    const origin = "https://app.example";
    const preflight = await callWithEnv({ CORS_ORIGINS: origin }, "OPTIONS", "/notes", undefined, {
      Origin: origin,
      "Access-Control-Request-Method": "GET",
      "Access-Control-Request-Headers": "x-d1-bookmark",
    });
    expect(preflight.headers.get("access-control-allow-headers")).toContain("X-D1-Bookmark");
    const response = await callWithEnv({ CORS_ORIGINS: origin }, "GET", "/notes", undefined, { Origin: origin });
    expect(response.headers.get("access-control-expose-headers")).toContain("X-D1-Bookmark");
  });
});

describe("requestSession", () => {
  /** A binding that records the constraint or bookmark each session was asked for. */
  function recordingBinding(asked: string[]): D1Database {
    return {
      withSession(constraint: string) {
        asked.push(constraint);
        return env.DB.withSession(constraint);
      },
    } as unknown as D1Database;
  }

  it("lets reads start at any replica and everything else at the primary, unless the client sent a bookmark", () => {
    const asked: string[] = [];
    const binding = recordingBinding(asked);
    const bookmark = "00000000-00000008-00000000-00000000000000000000000000000000";
    requestSession(binding, "GET", undefined);
    requestSession(binding, "HEAD", undefined);
    requestSession(binding, "POST", undefined);
    requestSession(binding, "DELETE", undefined);
    requestSession(binding, "GET", bookmark);
    requestSession(binding, "PATCH", bookmark);
    expect(asked).toEqual([
      "first-unconstrained",
      "first-unconstrained",
      "first-primary",
      "first-primary",
      bookmark,
      bookmark,
    ]);
  });
});
