import { exports } from "cloudflare:workers";
import { hc } from "hono/client";
import { describe, expect, it } from "vitest";
import { AuthMessage } from "../../src/auth/messages";
import { app, type AppType } from "../../src/index";
import { LiveMessage } from "../../src/live/messages";
import { NoteMessage } from "../../src/notes/messages";
import { SharingMessage } from "../../src/notes/sharing/messages";
import { BASE, call, PASSWORD, randomEmail } from "../support/app";
import { mailedCode } from "../support/mail";

type Operation = { requestBody?: { content: { "application/json": { schema: Record<string, unknown> } } } };
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

  it("names every answer the app can give", async () => {
    const text = JSON.stringify(await openApi());
    for (const message of [
      ...Object.values(AuthMessage),
      ...Object.values(NoteMessage),
      ...Object.values(LiveMessage),
      ...Object.values(SharingMessage),
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
});
