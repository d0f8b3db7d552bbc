import { env } from "cloudflare:workers";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { Contract } from "../contract";
import { storedUser, verifiedAccount } from "../support/accounts";
import { call, callWithEnv, JSON_TYPE, jsonOf, PASSWORD } from "../support/app";

interface NoteJson {
  id: number;
  title: string;
  content: string;
  created_at: string;
}

async function tokenFor(email: string): Promise<string> {
  const response = await call("POST", "/auth/login", { email, password: PASSWORD });
  return ((await response.json()) as { token: string }).token;
}

describe("NOTES_AUTH=required", () => {
  const required = { NOTES_AUTH: "required" };
  const as = (token: string) => ({ Authorization: `Bearer ${token}` });
  const asUser = async () => {
    const email = await verifiedAccount();
    return { email, headers: as(await tokenFor(email)), id: (await storedUser(email))!.id };
  };

  it.each([
    ["no Authorization header", {}],
    ["a malformed header", { Authorization: "Token abc" }],
    [
      "a token signed with another secret",
      { Authorization: "Bearer eyJhbGciOiJIUzI1NiJ9.eyJpZCI6IjEifQ.c2lnbmF0dXJl" },
    ],
  ])("answers 401 JSON with WWW-Authenticate: Bearer for %s", async (_case, headers) => {
    for (const [method, path] of [
      ["GET", "/notes"],
      ["POST", "/notes"],
      ["GET", "/notes/1"],
      ["PUT", "/notes/abc"],
    ] as const) {
      const response = await callWithEnv(
        required,
        method,
        path,
        method === "POST" ? { title: "t", content: "c" } : undefined,
        headers,
      );
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
      expect(response.headers.get("content-type")).toBe(JSON_TYPE);
      expect(await response.json()).toEqual({ error: "Unauthorized" });
    }
  });

  it("refuses an expired token and one with another algorithm", async () => {
    const key = new TextEncoder().encode(env.JWT_SECRET_KEY);
    const past = Math.floor(Date.now() / 1000) - 7200;
    const expired = await new SignJWT({ id: "1" })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuedAt(past)
      .setExpirationTime(past + 3600)
      .sign(key);
    const hs512 = await new SignJWT({ id: "1" }).setProtectedHeader({ alg: "HS512" }).setExpirationTime("1h").sign(key);
    for (const token of [expired, hs512]) {
      expect((await callWithEnv(required, "GET", "/notes", undefined, as(token))).status).toBe(401);
    }
  });

  it("gives each user only their own notes; someone else's note is 404", async () => {
    const alice = await asUser();
    const bob = await asUser();
    const created = await callWithEnv(
      required,
      "POST",
      "/notes",
      { title: "alice's", content: "private" },
      alice.headers,
    );
    expect(created.status).toBe(201);
    const note = (await created.json()) as NoteJson;
    expect(Object.keys(note).sort()).toEqual(["content", "created_at", "id", "title"]);
    const stored = await env.DB.prepare("SELECT user_id FROM notes WHERE id = ?")
      .bind(note.id)
      .first<{ user_id: number }>();
    expect(stored!.user_id).toBe(alice.id);

    expect(await jsonOf(await callWithEnv(required, "GET", `/notes/${note.id}`, undefined, alice.headers))).toEqual({
      status: 200,
      type: JSON_TYPE,
      body: note,
    });
    const notFound = { status: 404, type: JSON_TYPE, body: { error: Contract.noteNotFound } };
    expect(await jsonOf(await callWithEnv(required, "GET", `/notes/${note.id}`, undefined, bob.headers))).toEqual(
      notFound,
    );
    expect(
      await jsonOf(await callWithEnv(required, "PATCH", `/notes/${note.id}`, { title: "bob was here" }, bob.headers)),
    ).toEqual(notFound);
    expect(await jsonOf(await callWithEnv(required, "DELETE", `/notes/${note.id}`, undefined, bob.headers))).toEqual(
      notFound,
    );

    const bobsList = (await (
      await callWithEnv(required, "GET", "/notes", undefined, bob.headers)
    ).json()) as NoteJson[];
    expect(bobsList).toEqual([]);
    const alicesList = (await (
      await callWithEnv(required, "GET", "/notes", undefined, alice.headers)
    ).json()) as NoteJson[];
    expect(alicesList).toEqual([note]);
    const alicesPage = (await (
      await callWithEnv(required, "GET", "/notes?limit=5", undefined, alice.headers)
    ).json()) as NoteJson[];
    expect(alicesPage).toEqual([note]);

    expect((await callWithEnv(required, "PATCH", `/notes/${note.id}`, { title: "edited" }, alice.headers)).status).toBe(
      200,
    );
    expect((await callWithEnv(required, "DELETE", `/notes/${note.id}`, undefined, alice.headers)).status).toBe(204);
  });

  it("hides notes created while notes were public, and shows them again when the option is off", async () => {
    const publicNote = (await (
      await call("POST", "/notes", { title: "public", content: "from before" })
    ).json()) as NoteJson;
    const user = await asUser();
    expect((await callWithEnv(required, "GET", `/notes/${publicNote.id}`, undefined, user.headers)).status).toBe(404);
    expect((await call("GET", `/notes/${publicNote.id}`)).status).toBe(200);
  });

  it("answers 500 and names the setting when NOTES_AUTH has another value", async () => {
    const response = await callWithEnv({ NOTES_AUTH: "maybe" }, "GET", "/notes");
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ error: "Internal server error" });
  });
});
