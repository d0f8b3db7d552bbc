import { exports } from "cloudflare:workers";
import { hc } from "hono/client";
import { describe, expect, it } from "vitest";
import { BanMessage } from "../../src/auth/admin/shapes";
import { AuthMessage } from "../../src/auth/messages";
import { AuditMessage } from "../../src/audit/shapes";
import { AdminMessage } from "../../src/lib/admin";
import { app, type AppType } from "../../src/index";
import { LiveMessage } from "../../src/live/messages";
import { NoteMessage } from "../../src/notes/messages";
import { SharingMessage } from "../../src/notes/sharing/messages";
import { account, bearer, logIn } from "../support/accounts";
import { BASE, call, fetchWithEnv, PASSWORD, randomEmail } from "../support/app";
import { mailedCode } from "../support/mail";
import { PRIVATE_NOTES } from "../support/notes";

type Operation = {
  requestBody?: { content: { "application/json": { schema: Record<string, unknown> } } };
  responses: Record<string, unknown>;
};
type Document = { openapi: string; paths: Record<string, Record<string, Operation>> };

async function openApi(): Promise<Document> {
  const response = await call("GET", "/openapi.json");
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("application/json");
  return response.json();
}

describe("GET /openapi.json", () => {
  it("documents exactly the routes the app serves", async () => {
    const doc = await openApi();
    expect(doc.openapi).toBe("3.1.0");
    const documented = Object.entries(doc.paths)
      .flatMap(([path, item]) =>
        Object.keys(item)
          .filter((key) => key !== "parameters")
          .map((method) => `${method.toUpperCase()} ${path}`),
      )
      .sort();
    const served = [
      ...new Set(
        app.routes
          .filter((route) => route.method !== "ALL" && !route.path.includes("*"))
          .map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, "{$1}")}`),
      ),
    ].sort();
    expect(documented).toEqual(served);
  });

  it("converts the request schemas that validate the bodies", async () => {
    const doc = await openApi();
    const schema = (path: string, method: string) =>
      doc.paths[path]![method]!.requestBody!.content["application/json"].schema;
    expect(schema("/auth/register", "post")).toMatchObject({
      type: "object",
      required: ["email", "password"],
      properties: { email: { type: "string" }, password: { type: "string" } },
    });
    expect(schema("/notes", "post")).toMatchObject({ required: ["title", "content"] });
    expect(schema("/notes/{id}", "patch")).toMatchObject({
      properties: { title: { type: "string" }, content: { type: "string" } },
    });
    expect(schema("/notes/{id}", "patch").required ?? []).toEqual([]);
  });

  it("documents live updates: the ticket, and the socket as an upgrade with its frames", async () => {
    type Described = { description: string; responses: Record<string, unknown> };
    const doc = (await openApi()) as unknown as { paths: Record<string, Record<string, Described>> };
    expect(Object.keys(doc.paths["/changes/live-ticket"]!.post!.responses)).toEqual(
      expect.arrayContaining(["201", "401", "404", "429"]),
    );
    const socket = doc.paths["/changes/live"]!.get!;
    expect(Object.keys(socket.responses)).toEqual(
      expect.arrayContaining(["101", "400", "401", "403", "404", "426", "429"]),
    );
    for (const frame of [
      '{"type":"ready"}',
      '{"type":"changed","bookmark":',
      '{"type":"ping"}',
      '{"type":"pong"}',
      "4001",
    ])
      expect(socket.description).toContain(frame);
  });

  it("documents every sharing route with its answers", async () => {
    const doc = await openApi();
    const statuses = (path: string, method: string) => Object.keys(doc.paths[path]![method]!.responses).sort();
    expect(statuses("/notes/{id}/links", "post")).toEqual(["201", "400", "401", "403", "404", "409", "429", "500"]);
    expect(statuses("/notes/{id}/links", "get")).toEqual(["200", "400", "401", "403", "404", "500"]);
    expect(statuses("/notes/{id}/links/{linkId}", "delete")).toEqual(["204", "400", "401", "403", "404", "429", "500"]);
    expect(statuses("/shared/{token}", "get")).toEqual(["200", "404", "429", "500"]);
    expect(statuses("/notes/{id}/shares", "post")).toEqual([
      "201",
      "400",
      "401",
      "403",
      "404",
      "409",
      "413",
      "429",
      "500",
    ]);
    expect(statuses("/notes/{id}/shares", "get")).toEqual(["200", "400", "401", "404", "500"]);
    expect(statuses("/notes/{id}/shares/{shareId}", "patch")).toEqual([
      "200",
      "400",
      "401",
      "403",
      "404",
      "413",
      "429",
      "500",
    ]);
    expect(statuses("/notes/{id}/shares/{shareId}", "delete")).toEqual(["204", "400", "401", "404", "429", "500"]);
  });

  it("documents the admin API under its own tag and security scheme, with every answer it gives", async () => {
    type Described = { tags: string[]; security: unknown[] };
    const doc = (await openApi()) as unknown as {
      tags: Array<{ name: string }>;
      components: { securitySchemes: Record<string, unknown> };
      paths: Record<string, Record<string, Described>>;
    };
    expect(doc.tags.map((tag) => tag.name)).toContain("admin");
    expect(doc.components.securitySchemes.admin).toMatchObject({ type: "http", scheme: "bearer" });
    const admin = Object.entries(doc.paths).filter(([path]) => path.startsWith("/admin/"));
    expect(admin.map(([path]) => path).sort()).toEqual([
      "/admin/audit",
      "/admin/users",
      "/admin/users/{id}",
      "/admin/users/{id}/ban",
      "/admin/users/{id}/sign-out",
      "/admin/users/{id}/unban",
      "/admin/webhooks/failed",
      "/admin/webhooks/failed/{id}/retry",
    ]);
    for (const [, item] of admin)
      for (const operation of Object.values(item)) {
        expect(operation.tags).toEqual(["admin"]);
        expect(operation.security).toEqual([{ admin: [] }]);
      }
  });

  it("names every answer the app can give", async () => {
    const text = JSON.stringify(await openApi());
    const { methodNotAllowed: _405, ...adminMessages } = AdminMessage;
    for (const message of [
      ...Object.values(AuthMessage),
      ...Object.values(NoteMessage),
      ...Object.values(LiveMessage),
      ...Object.values(SharingMessage),
      ...Object.values(adminMessages),
      ...Object.values(BanMessage),
      ...Object.values(AuditMessage),
    ]) {
      expect(text, message).toContain(JSON.stringify(message).slice(1, -1));
    }
  });
});

describe("GET /docs", () => {
  it("serves a self-contained HTML page that reads /openapi.json", async () => {
    const response = await call("GET", "/docs");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=UTF-8");
    const html = await response.text();
    expect(html).toContain('fetch("/openapi.json")');
    // Nothing is loaded from elsewhere: no scripts, styles or fonts by absolute URL.
    expect(html).not.toMatch(/(src|href)=["']?(https?:)?\/\//);
  });
});

describe("GET /", () => {
  it("redirects to the /docs page", async () => {
    // Through the app's fetch as a client sends it, but without following the redirect.
    const response = await exports.default.fetch(new Request(`${BASE}/`, { redirect: "manual" }));
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("/docs");
    const page = await call("GET", "/docs");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=UTF-8");
  });
});

describe("typed client (hc<AppType>)", () => {
  const client = hc<AppType>(BASE, {
    fetch: (input: RequestInfo | URL, init?: RequestInit) => exports.default.fetch(new Request(input, init)),
  });

  it("drives the whole flow: register, verify with the mailed code, log in, notes CRUD", async () => {
    const email = randomEmail("client");
    const registered = await client.auth.register.$post({ json: { email, password: PASSWORD } });
    expect(registered.status).toBe(201);
    expect(await registered.text()).toBe(AuthMessage.userCreated);

    const verified = await client.auth["verify-email"].$post({ json: { email, token: await mailedCode(email) } });
    expect(await verified.text()).toBe(AuthMessage.emailVerified);

    const login = await client.auth.login.$post({ json: { email, password: PASSWORD } });
    if (login.status !== 200) expect.fail(`login answered ${login.status}`);
    const answer = await login.json();
    if ("mfa_required" in answer) expect.fail("an account without a second factor got a challenge");
    const { token } = answer;
    expect(token.split(".")).toHaveLength(3);

    const created = await client.notes.$post({ json: { title: "From the client", content: "typed" } });
    if (created.status !== 201) expect.fail(`create answered ${created.status}`);
    const note = await created.json();
    expect(note).toMatchObject({ title: "From the client", content: "typed" });

    const id = String(note.id);
    expect(await (await client.notes[":id"].$get({ param: { id } })).json()).toEqual(note);
    const patched = await client.notes[":id"].$patch({ param: { id }, json: { content: "edited" } });
    expect(await patched.json()).toEqual({ ...note, content: "edited" });
    const page = await client.notes.$get({ query: { limit: "1", after: String(note.id - 1) } });
    expect(await page.json()).toEqual([{ ...note, content: "edited" }]);
    expect((await client.notes[":id"].$delete({ param: { id } })).status).toBe(204);
    expect((await client.notes[":id"].$get({ param: { id } })).status).toBe(404);
  });

  it("drives sharing with two accounts: a public link and its note, a share, the shared list, a role, leaving", async () => {
    const [ownerEmail, granteeEmail] = [await account(), await account()];
    const as = async (email: string) =>
      hc<AppType>(BASE, { fetch: fetchWithEnv(PRIVATE_NOTES), headers: bearer((await logIn(email)).token) });
    const [owner, grantee] = [await as(ownerEmail), await as(granteeEmail)];

    const created = await owner.notes.$post({ json: { title: "Shared", content: "typed" } });
    if (created.status !== 201) expect.fail(`create answered ${created.status}`);
    const note = await created.json();
    const id = String(note.id);

    const made = await owner.notes[":id"].links.$post({ param: { id } });
    if (made.status !== 201) expect.fail(`link answered ${made.status}`);
    const link = await made.json();
    expect(link.url).toBe(`${BASE}/shared/${link.token}`);
    const opened = await owner.shared[":token"].$get({ param: { token: link.token } });
    if (opened.status !== 200) expect.fail(`the link answered ${opened.status}`);
    expect(await opened.json()).toEqual({
      title: "Shared",
      content: "typed",
      created_at: note.created_at,
      updated_at: note.created_at,
    });
    expect(await (await owner.notes[":id"].links.$get({ param: { id } })).json()).toEqual([
      { id: link.id, created_at: link.created_at },
    ]);

    const shared = await owner.notes[":id"].shares.$post({
      param: { id },
      json: { email: granteeEmail, role: "viewer" },
    });
    if (shared.status !== 201) expect.fail(`share answered ${shared.status}`);
    const share = await shared.json();
    expect(await (await grantee.notes.$get({ query: { shared: "true" } })).json()).toEqual([note]);
    const role = await owner.notes[":id"].shares[":shareId"].$patch({
      param: { id, shareId: share.id },
      json: { role: "editor" },
    });
    expect(await role.json()).toEqual({ ...share, role: "editor" });
    expect(await (await grantee.notes[":id"].shares.$get({ param: { id } })).json()).toEqual([
      { ...share, role: "editor" },
    ]);

    expect((await grantee.notes[":id"].shares[":shareId"].$delete({ param: { id, shareId: share.id } })).status).toBe(
      204,
    );
    expect((await grantee.notes[":id"].$get({ param: { id } })).status).toBe(404);
    expect((await owner.notes[":id"].links[":linkId"].$delete({ param: { id, linkId: link.id } })).status).toBe(204);
    expect((await owner.shared[":token"].$get({ param: { token: link.token } })).status).toBe(404);
  });
});
