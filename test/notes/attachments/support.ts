import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import * as v from "valibot";
import { hex } from "../../../src/lib/encoding";
import worker from "../../../src/index";
import type { AttachmentJson } from "../../../src/notes/attachments/shapes";
import type { Bindings } from "../../../src/types";
import { account, bearer, logIn, storedUser } from "../../support/accounts";
import { callWithEnv, type Overrides } from "../../support/app";
import { Note, PRIVATE_NOTES } from "../../support/notes";

/**
 * What the attachment tests share: an account with a note, uploads and requests through the app with
 * NOTES_AUTH=required (callWithEnv), and the rows and R2 objects as they are stored.
 */

/** A request through the app with private notes (and any other bindings replaced). */
export function send(
  method: string,
  path: string,
  options: { token?: string; body?: Uint8Array | string; headers?: Record<string, string>; env?: Overrides } = {},
): Promise<Response> {
  const headers = { ...(options.token ? bearer(options.token) : {}), ...options.headers };
  return callWithEnv({ ...PRIVATE_NOTES, ...options.env }, method, path, options.body, headers);
}

export interface Owner {
  email: string;
  token: string;
  userId: number;
}

/** A verified account, logged in. */
export async function owner(): Promise<Owner> {
  const email = await account();
  const { token } = await logIn(email);
  return { email, token, userId: (await storedUser(email))!.id };
}

/** A new note of `token`'s account: its id. */
export async function newNote(token: string, title = "With files"): Promise<number> {
  const response = await send("POST", "/notes", { token, body: JSON.stringify({ title, content: "c" }) });
  if (response.status !== 201) throw new Error(`creating a note: ${response.status} ${await response.text()}`);
  return v.parse(Note, await response.json()).id;
}

/** POST /notes/{noteId}/attachments with `bytes` and their Content-Length (unless `headers` says otherwise). */
export function upload(
  token: string,
  noteId: number,
  bytes: Uint8Array,
  options: { filename?: string; headers?: Record<string, string>; env?: Overrides } = {},
): Promise<Response> {
  const query = options.filename === undefined ? "" : `?filename=${encodeURIComponent(options.filename)}`;
  return send("POST", `/notes/${noteId}/attachments${query}`, {
    token,
    body: bytes,
    headers: {
      "Content-Type": "application/octet-stream",
      "Content-Length": String(bytes.byteLength),
      ...options.headers,
    },
    env: options.env,
  });
}

/** An upload expected to succeed: the attachment. */
export async function uploaded(token: string, noteId: number, bytes: Uint8Array, filename?: string) {
  const response = await upload(token, noteId, bytes, { filename });
  if (response.status !== 201) throw new Error(`upload: ${response.status} ${await response.text()}`);
  return (await response.json()) as AttachmentJson;
}

/** The path and query of a signed link, to send through the app. */
export function linkPath(url: string): string {
  const link = new URL(url);
  return `${link.pathname}${link.search}`;
}

export async function sha256Of(bytes: Uint8Array): Promise<string> {
  return hex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
}

/** `size` bytes of a repeating pattern (not text: every byte value occurs), the same for the same arguments. */
export function patternBytes(size: number, seed = 7): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + seed) & 0xff;
  return bytes;
}

export const text = (value: string) => new TextEncoder().encode(value);

/** `size` random bytes: no two chunks of a stream alike, so a chunk written twice or lost shows in the hash. */
export function randomBytes(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  // getRandomValues fills at most 65,536 bytes a call.
  for (let at = 0; at < size; at += 65_536) crypto.getRandomValues(bytes.subarray(at, Math.min(size, at + 65_536)));
  return bytes;
}

/** A 1×1 PNG (a red pixel). */
export const PNG = Uint8Array.from(
  atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="),
  (char) => char.charCodeAt(0),
);

/** The attachment row as D1 holds it, or null. */
export function storedRow(id: string) {
  return env.DB.prepare("SELECT * FROM attachments WHERE id = ?").bind(id).first<Record<string, unknown>>();
}

/** The bytes R2 holds under `key`, or null. */
export async function objectBytes(key: string): Promise<Uint8Array | null> {
  const object = await env.ATTACHMENTS.get(key);
  return object && new Uint8Array(await object.arrayBuffer());
}

/** How many attachment rows a note has (uploads under way included). */
export async function rowsOfNote(noteId: number): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM attachments WHERE note_id = ?")
    .bind(noteId)
    .first<number>("n");
  return row ?? 0;
}

/**
 * A request built by the test itself (a streamed body, no Content-Length), through the app with private
 * notes, answering once the work it left to waitUntil is done.
 */
export async function sendRequest(request: Request, overrides: Overrides = {}): Promise<Response> {
  const ctx = createExecutionContext();
  const bindings: Bindings = { ...env, ...PRIVATE_NOTES, ...overrides };
  const response = await worker.fetch(request, bindings, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

/** A body that arrives in the given chunks, and tells whether anyone read it. */
export function chunkedBody(chunks: Uint8Array[]): { body: ReadableStream<Uint8Array>; read: () => boolean } {
  let pulled = false;
  let next = 0;
  // No queue: a chunk is made only when a reader asks for one.
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        pulled = true;
        const chunk = chunks[next++];
        if (chunk) controller.enqueue(chunk);
        else controller.close();
      },
    },
    { highWaterMark: 0 },
  );
  return { body, read: () => pulled };
}

/**
 * The real bucket, with the keys of every object the app put into it recorded (to find an upload that
 * answered without an id), and optionally a delete that fails, as an R2 outage would.
 */
export function watchedBucket(options: { failDeletes?: boolean } = {}): { bucket: R2Bucket; puts: string[] } {
  const puts: string[] = [];
  const real = env.ATTACHMENTS;
  const bucket = new Proxy(real, {
    get(target, name) {
      if (name === "put")
        return (key: string, ...rest: Parameters<R2Bucket["put"]> extends [string, ...infer R] ? R : never) => {
          puts.push(key);
          return target.put(key, ...rest);
        };
      if (name === "delete" && options.failDeletes) return () => Promise.reject(new Error("R2 is unavailable"));
      const value: unknown = Reflect.get(target, name);
      if (typeof value !== "function") return value;
      return (...args: unknown[]): unknown => Reflect.apply(value, target, args);
    },
  });
  return { bucket, puts };
}
