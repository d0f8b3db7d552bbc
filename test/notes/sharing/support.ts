import { env } from "cloudflare:workers";
import * as v from "valibot";
import { expect } from "vitest";
import { Link, NewLink, Share } from "../../../src/notes/sharing/shapes";
import { account, bearer, logIn, storedUser } from "../../support/accounts";
import { call, callWithEnv, PASSWORD, type Overrides } from "../../support/app";
import { Note, PRIVATE_NOTES } from "../../support/notes";

/**
 * What the sharing tests share: accounts that own and receive notes, requests through the app with
 * NOTES_AUTH=required (callWithEnv, waiting for the work left to waitUntil: mails, pokes), and the rows as stored.
 */

export type NoteJson = v.InferOutput<typeof Note>;

/** A request through the app with private notes (and any other bindings replaced). */
export function send(
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string>; env?: Overrides } = {},
): Promise<Response> {
  const headers = { ...(options.token ? bearer(options.token) : {}), ...options.headers };
  return callWithEnv({ ...PRIVATE_NOTES, ...options.env }, method, path, options.body, headers);
}

export interface Person {
  email: string;
  token: string;
  userId: number;
  /** A request of this person's session. */
  send(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
}

/** A person logged in as the verified account of `email` (a new one unless given). */
export async function person(email?: string): Promise<Person> {
  const address = email ?? (await account());
  const { token } = await logIn(address);
  return {
    email: address,
    token,
    userId: (await storedUser(address))!.id,
    send: (method, path, body, headers) => send(method, path, { token, body, headers }),
  };
}

/** A new note of `owner`: its JSON. */
export async function noteOf(owner: Person, title = "Shared", content = "with care"): Promise<NoteJson> {
  const response = await owner.send("POST", "/notes", { title, content });
  if (response.status !== 201) throw new Error(`creating a note: ${response.status} ${await response.text()}`);
  return v.parse(Note, await response.json());
}

/** `owner` shares note `noteId` with `email` as `role`, expecting 201: the share. */
export async function shared(owner: Person, noteId: number, email: string, role: "viewer" | "editor" = "viewer") {
  const response = await owner.send("POST", `/notes/${noteId}/shares`, { email, role });
  if (response.status !== 201) throw new Error(`sharing: ${response.status} ${await response.text()}`);
  return v.parse(Share, await response.json());
}

/** `owner` makes a public link to note `noteId`, expecting 201: the link with its token. */
export async function linked(owner: Person, noteId: number) {
  const response = await owner.send("POST", `/notes/${noteId}/links`);
  if (response.status !== 201) throw new Error(`linking: ${response.status} ${await response.text()}`);
  return v.parse(NewLink, await response.json());
}

export const Links = v.array(Link);
export const Shares = v.array(Share);

/** GET /shared/{token}, as anyone with the link opens it (no account), from client `ip` unless told. */
export function openLink(token: string, overrides: Overrides = {}, ip = "203.0.113.9"): Promise<Response> {
  return callWithEnv({ ...PRIVATE_NOTES, ...overrides }, "GET", `/shared/${token}`, undefined, {
    "CF-Connecting-IP": ip,
  });
}

/** Every row of `table` matching `where`, as D1 holds them. */
export async function rows(table: string, where: string, ...params: unknown[]): Promise<Record<string, unknown>[]> {
  const { results } = await env.DB.prepare(`SELECT * FROM ${table} WHERE ${where}`)
    .bind(...params)
    .all<Record<string, unknown>>();
  return results;
}

/** Expects an answer's status and exact JSON body. */
export async function expectJson(response: Response, status: number, body: unknown): Promise<void> {
  expect({ status: response.status, type: response.headers.get("content-type"), body: await response.json() }).toEqual({
    status,
    type: "application/json",
    body,
  });
}

/** Deletes `who`'s account through the API (with its password), expecting 204. */
export async function deleteAccount(who: Person): Promise<void> {
  const response = await call("DELETE", "/auth/account", { password: PASSWORD }, bearer(who.token));
  expect(response.status).toBe(204);
}
