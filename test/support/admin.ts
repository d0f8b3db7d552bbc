import { env } from "cloudflare:workers";
import { call } from "./app";

/** The admin API's Authorization header, with the suite's ADMIN_TOKEN. */
export const ADMIN = { Authorization: `Bearer ${env.ADMIN_TOKEN}` };

/** A request to the admin API with the admin token, through the app's own fetch. */
export function admin(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  return call(method, path, body, { ...ADMIN, ...headers });
}

/** The id of the account of `email`, read from D1. */
export async function userIdOf(email: string): Promise<number> {
  const row = await env.DB.prepare("SELECT id FROM users WHERE email = ?").bind(email).first<{ id: number }>();
  if (!row) throw new Error(`no account for ${email}`);
  return row.id;
}

/** An admin answer's headers that every test checks: JSON, not stored. */
export function expectAdminHeaders(response: Response): { type: string | null; cache: string | null } {
  return { type: response.headers.get("content-type"), cache: response.headers.get("cache-control") };
}
