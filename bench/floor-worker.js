// The benchmark's "floor": the least a Worker can do to serve the notes endpoints over D1.
// A bare module worker (no Hono, no Drizzle, no logging), one prepared D1 statement per request,
// the same JSON shape as our worker ({"id","title","content","created_at"}, created_at as ISO 8601),
// the same status codes, and the same checks on title and content. Our worker's throughput is
// reported as a ratio of this one's, measured in the same runtime and the same run.

const COLUMNS = "id, title, content, created_at";
const SQL = {
  list: `SELECT ${COLUMNS} FROM notes ORDER BY id`,
  get: `SELECT ${COLUMNS} FROM notes WHERE id = ?1`,
  insert: `INSERT INTO notes (title, content, created_at) VALUES (?1, ?2, ?3) RETURNING ${COLUMNS}`,
  // coalesce keeps a field that the PATCH body leaves out; still exactly one statement.
  update: `UPDATE notes SET title = coalesce(?2, title), content = coalesce(?3, content) WHERE id = ?1 RETURNING ${COLUMNS}`,
};
const MAX_TITLE_CHARS = 200;
const DECIMAL_INTEGER = /^-?\d+$/;

/** Prepared once per D1 binding and reused; binding values gives a new statement without re-preparing. */
let prepared;
function statements(db) {
  if (prepared?.db !== db) {
    prepared = { db };
    for (const [name, sql] of Object.entries(SQL)) prepared[name] = db.prepare(sql);
  }
  return prepared;
}

function json(value, status = 200) {
  return new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json" } });
}

const error = (message, status) => json({ error: message }, status);

function toJson(row) {
  return { id: row.id, title: row.title, content: row.content, created_at: new Date(row.created_at).toISOString() };
}

async function readObject(request) {
  let value;
  try {
    value = JSON.parse(await request.text());
  } catch {
    return undefined;
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined;
}

/** The title rules of our worker: a string, not blank, at most 200 code points. Returns an error message. */
function titleProblem(title) {
  if (title.trim() === "") return "title must not be empty";
  if ([...title].length > MAX_TITLE_CHARS) return `title must be at most ${MAX_TITLE_CHARS} characters`;
  return undefined;
}

async function createNote(request, db) {
  const body = await readObject(request);
  if (!body) return error("Request body must be a JSON object.", 400);
  const { title, content } = body;
  if (typeof title !== "string") return error("title is required and must be a string", 400);
  if (typeof content !== "string") return error("content is required and must be a string", 400);
  const problem = titleProblem(title);
  if (problem) return error(problem, 400);
  const row = await statements(db).insert.bind(title, content, Date.now()).first();
  return json(toJson(row), 201);
}

async function updateNote(request, db, id) {
  const body = await readObject(request);
  if (!body) return error("Request body must be a JSON object.", 400);
  const { title, content } = body;
  if (title !== undefined && typeof title !== "string") return error("title must be a string", 400);
  if (content !== undefined && typeof content !== "string") return error("content must be a string", 400);
  const problem = title === undefined ? undefined : titleProblem(title);
  if (problem) return error(problem, 400);
  const row = await statements(db)
    .update.bind(id, title ?? null, content ?? null)
    .first();
  return row ? json(toJson(row)) : error("Note not found", 404);
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    const { method } = request;
    const db = env.DB;

    if (pathname === "/notes") {
      if (method === "GET") {
        const { results } = await statements(db).list.all();
        return json(results.map(toJson));
      }
      if (method === "POST") return createNote(request, db);
      return new Response("Method not allowed", { status: 405, headers: { Allow: "GET, POST" } });
    }

    if (pathname.startsWith("/notes/")) {
      const raw = pathname.slice("/notes/".length);
      const id = Number(raw);
      if (!DECIMAL_INTEGER.test(raw) || !Number.isSafeInteger(id)) return error("Invalid note id", 400);
      if (method === "GET") {
        const row = await statements(db).get.bind(id).first();
        return row ? json(toJson(row)) : error("Note not found", 404);
      }
      if (method === "PATCH") return updateNote(request, db, id);
      return new Response("Method not allowed", { status: 405, headers: { Allow: "GET, PATCH" } });
    }

    return error("Not found", 404);
  },
};
