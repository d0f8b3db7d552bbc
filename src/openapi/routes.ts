import { Hono } from "hono";
import { CONTENT_SECURITY_POLICY, DOCUMENT_SECURITY_HEADERS } from "../lib/security-headers";
import type { AppEnv } from "../types";
import { describeRoute, json } from "../lib/describe";
import { openApiDocument, type RegisteredRoute } from "./document";
import { DOCS_HTML, docsContentSecurityPolicy } from "./page";

const docsTag = ["docs"];

/**
 * GET /, /openapi.json and /docs. The document is built from the routes of the whole app, which the app
 * hands in (`routesOf`), once per isolate: it depends only on the code.
 */
export function docsRoutes(routesOf: () => readonly RegisteredRoute[]) {
  let document: ReturnType<typeof openApiDocument> | undefined;
  return (
    new Hono<AppEnv>()
      // The root has no API of its own: a person who opens it lands on the reference. 302, not 301, so
      // that no browser remembers it should the root ever answer something else.
      .get(
        "/",
        describeRoute({
          tags: docsTag,
          summary: "Redirects to /docs",
          responses: {
            "302": {
              description: "To the interactive reference",
              headers: { Location: { description: "`/docs`", schema: { type: "string" } } },
            },
          },
        }),
        (c) => c.redirect("/docs", 302),
      )
      .get(
        "/openapi.json",
        describeRoute({
          tags: docsTag,
          summary: "This document",
          responses: { "200": json("OpenAPI 3.1", { type: "object" }) },
        }),
        (c) => c.json((document ??= openApiDocument(routesOf())), 200),
      )
      .get(
        "/docs",
        describeRoute({
          tags: docsTag,
          summary: "Interactive reference",
          responses: { "200": { description: "HTML page", content: { "text/html": { schema: { type: "string" } } } } },
        }),
        async (c) =>
          c.html(DOCS_HTML, 200, {
            ...DOCUMENT_SECURITY_HEADERS,
            [CONTENT_SECURITY_POLICY]: await docsContentSecurityPolicy(),
          }),
      )
  );
}
