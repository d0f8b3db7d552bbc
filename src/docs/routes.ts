import { Hono } from "hono";
import type { AppEnv } from "../types";
import { openApiDocument } from "./openapi";
import { DOCS_HTML } from "./page";

// Built once per isolate: the document depends only on the code.
let document: ReturnType<typeof openApiDocument> | undefined;

export const docs = new Hono<AppEnv>()
  // The root has no API of its own: a person who opens it lands on the reference. 302, not 301, so
  // that no browser remembers it should the root ever answer something else.
  .get("/", (c) => c.redirect("/docs", 302))
  .get("/openapi.json", (c) => c.json((document ??= openApiDocument()), 200))
  .get("/docs", (c) => c.html(DOCS_HTML, 200));
