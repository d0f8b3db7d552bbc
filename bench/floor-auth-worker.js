// The benchmark's same-work floor for NOTES_AUTH=required: the least a Worker can do to serve a user's
// notes behind a bearer token, doing the same work as ours and nothing else. A bare module worker (no
// Hono, no Drizzle, no logging):
// - the `Authorization: Bearer` header parsed;
// - HS256 checked with WebCrypto under a key imported once per isolate;
// - the claims checked as ours checks them: `iat` and `exp` present, `exp` in the future, a lifetime of at
//   most an hour, `id` a canonical decimal user id, `sid` a session id;
// - one `env.DB.batch([session check, the user's statement])` (a batch is one D1 round trip);
// - the same JSON as ours (JSON.stringify), the same statuses, and for a page the same `Link` header.
// Our worker's throughput with NOTES_AUTH=required is reported as a ratio of this one's.

const COLUMNS = "id, title, content, created_at";
const SQL = {
  session: "SELECT id FROM sessions WHERE id = ?1 AND user_id = ?2 AND expires_at > ?3",
  get: `SELECT ${COLUMNS} FROM notes WHERE id = ?1 AND user_id = ?2`,
  // `?2 + 0`, not a bare `?2`: SQLite compiles a statement again whenever a bare LIMIT is bound (about 8 µs
  // here; CONTRIBUTING.md, "A statement on a hot path"), a cost our worker does not pay either.
  page: `SELECT ${COLUMNS} FROM notes WHERE user_id = ?1 ORDER BY id LIMIT ?2 + 0`,
  insert: `INSERT INTO notes (title, content, created_at, user_id) VALUES (?1, ?2, ?3, ?4) RETURNING ${COLUMNS}`,
  update: `UPDATE notes SET title = coalesce(?2, title), content = coalesce(?3, content) WHERE id = ?1 AND user_id = ?4 RETURNING ${COLUMNS}`,
};
const ACCESS_TOKEN_TTL_SECONDS = 3600;
const MAX_TITLE_CHARS = 200;
const MAX_PAGE = 100;
const DECIMAL_INTEGER = /^-?\d+$/;
const CANONICAL_ID = /^[1-9][0-9]{0,15}$/;
const SESSION_ID = /^[A-Za-z0-9_-]{22}$/;
const BEARER = /^Bearer +([^ ]+)$/i;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Prepared once per D1 binding and reused. */
let prepared;
function statements(db) {
  if (prepared?.db !== db) {
    prepared = { db };
    for (const [name, sql] of Object.entries(SQL)) prepared[name] = db.prepare(sql);
  }
  return prepared;
}

/** The HS256 key, imported once per isolate and secret. */
let hmac;
function hmacKey(secret) {
  if (hmac?.secret !== secret) {
    hmac = {
      secret,
      key: crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]),
    };
  }
  return hmac.key;
}

function fromBase64url(text) {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

/** The user and session of a valid access token, or undefined. */
async function claimsOf(request, secret) {
  const token = BEARER.exec(request.headers.get("authorization") ?? "")?.[1];
  if (!token) return undefined;
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  try {
    const header = JSON.parse(decoder.decode(fromBase64url(parts[0])));
    if (header.alg !== "HS256") return undefined;
    const valid = await crypto.subtle.verify(
      "HMAC",
      await hmacKey(secret),
      fromBase64url(parts[2]),
      encoder.encode(`${parts[0]}.${parts[1]}`),
    );
    if (!valid) return undefined;
    const { id, sid, iat, exp } = JSON.parse(decoder.decode(fromBase64url(parts[1])));
    const now = Math.floor(Date.now() / 1000);
    if (typeof iat !== "number" || typeof exp !== "number" || exp <= now || now - iat > ACCESS_TOKEN_TTL_SECONDS)
      return undefined;
    if (exp - iat > ACCESS_TOKEN_TTL_SECONDS) return undefined;
    if (typeof id !== "string" || !CANONICAL_ID.test(id) || typeof sid !== "string" || !SESSION_ID.test(sid))
      return undefined;
    return { userId: Number(id), sessionId: sid };
  } catch {
    return undefined;
  }
}

function json(value, status = 200, headers = {}) {
  return new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json", ...headers } });
}

const error = (message, status) => json({ error: message }, status);
const unauthorized = () => new Response("Unauthorized", { status: 401, headers: { "content-type": "text/plain" } });

function toJson(row) {
  return { id: row.id, title: row.title, content: row.content, created_at: new Date(row.created_at).toISOString() };
}

async function readObject(request) {
  try {
    const value = JSON.parse(await request.text());
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function titleProblem(title) {
  if (title.trim() === "") return "title must not be empty";
  if ([...title].length > MAX_TITLE_CHARS) return `title must be at most ${MAX_TITLE_CHARS} characters`;
  return undefined;
}

/** Runs the user's statement in one batch with the session check: its rows, or undefined for a dead session. */
async function asCaller(db, caller, statement) {
  const [session, result] = await db.batch([
    statements(db).session.bind(caller.sessionId, caller.userId, Date.now()),
    statement,
  ]);
  return session.results.length ? result.results : undefined;
}

async function createNote(request, db, caller) {
  const body = await readObject(request);
  if (!body) return error("Request body must be a JSON object.", 400);
  const { title, content } = body;
  if (typeof title !== "string") return error("title is required and must be a string", 400);
  if (typeof content !== "string") return error("content is required and must be a string", 400);
  const problem = titleProblem(title);
  if (problem) return error(problem, 400);
  const rows = await asCaller(db, caller, statements(db).insert.bind(title, content, Date.now(), caller.userId));
  return rows ? json(toJson(rows[0]), 201) : unauthorized();
}

async function updateNote(request, db, caller, id) {
  const body = await readObject(request);
  if (!body) return error("Request body must be a JSON object.", 400);
  const { title, content } = body;
  if (title !== undefined && typeof title !== "string") return error("title must be a string", 400);
  if (content !== undefined && typeof content !== "string") return error("content must be a string", 400);
  const problem = title === undefined ? undefined : titleProblem(title);
  if (problem) return error(problem, 400);
  const rows = await asCaller(
    db,
    caller,
    statements(db).update.bind(id, title ?? null, content ?? null, caller.userId),
  );
  if (!rows) return unauthorized();
  return rows.length ? json(toJson(rows[0])) : error("Note not found", 404);
}

async function listPage(url, db, caller) {
  const limit = Number(url.searchParams.get("limit") ?? MAX_PAGE);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)
    return error(`limit must be an integer from 1 to ${MAX_PAGE}`, 400);
  const rows = await asCaller(db, caller, statements(db).page.bind(caller.userId, limit + 1));
  if (!rows) return unauthorized();
  const page = rows.slice(0, limit);
  const headers = rows.length > limit ? { Link: `</notes?limit=${limit}&after=${page.at(-1).id}>; rel="next"` } : {};
  return json(page.map(toJson), 200, headers);
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const { pathname } = url;
    const { method } = request;
    const db = env.DB;
    const caller = await claimsOf(request, env.JWT_SECRET_KEY);

    if (pathname === "/notes") {
      if (!caller) return unauthorized();
      if (method === "GET") return listPage(url, db, caller);
      if (method === "POST") return createNote(request, db, caller);
      return new Response("Method not allowed", { status: 405, headers: { Allow: "GET, POST" } });
    }

    if (pathname.startsWith("/notes/")) {
      const raw = pathname.slice("/notes/".length);
      const id = Number(raw);
      if (!DECIMAL_INTEGER.test(raw) || !Number.isSafeInteger(id)) return error("Invalid note id", 400);
      if (!caller) return unauthorized();
      if (method === "GET") {
        const rows = await asCaller(db, caller, statements(db).get.bind(id, caller.userId));
        if (!rows) return unauthorized();
        return rows.length ? json(toJson(rows[0])) : error("Note not found", 404);
      }
      if (method === "PATCH") return updateNote(request, db, caller, id);
      return new Response("Method not allowed", { status: 405, headers: { Allow: "GET, PATCH" } });
    }

    return error("Not found", 404);
  },
};
