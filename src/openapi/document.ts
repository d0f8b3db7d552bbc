import { AuthMessage } from "../auth/messages";
import {
  Identity,
  Login,
  Me,
  MfaChallenge,
  OAuthRefusal,
  Passkey,
  PasskeyRefusal,
  RegistrationOptions,
  Session,
  SignInOptions,
  Tokens,
} from "../auth/shapes";
import { AdminUser, AdminUserDetail, AdminUserPage } from "../auth/admin/shapes";
import { AuditEvent, EventPage } from "../audit/shapes";
import { FailedWebhook, FailedWebhookPage } from "../audit/webhooks/routes";
import { BOOKMARK, BOOKMARK_HEADER } from "../db/client";
import { validatedBy } from "../lib/validation";
import { LiveTicket } from "../live/requests";
import { NoteMessage } from "../notes/messages";
import { Note } from "../notes/requests";
import { operationOf, schemaOf, type Json, type Operation } from "../lib/describe";

/**
 * The OpenAPI 3.1 document of the whole API. Only what is global lives here (info, shared schemas, the
 * bookmark parameter, security schemes); each operation is described beside its handler (describeRoute)
 * and collected from the app's registered routes, with its request body or query schema taken from the
 * validator that checks it. test/openapi/routes.test.ts checks that every route the app serves is documented.
 */

/** A route as Hono registers it: every handler of a chain (middleware included) is one entry. */
export interface RegisteredRoute {
  method: string;
  path: string;
  handler: unknown;
}

/** Every path that uses the database takes the bookmark header. */
const usesDatabase = (path: string) =>
  path.startsWith("/auth/") || path.startsWith("/notes") || path.startsWith("/changes") || path.startsWith("/admin/");

function operation(path: string, described: Operation, handlers: unknown[]): Json {
  const { requestExample, parameters = [], ...rest } = described;
  const validated = handlers.map(validatedBy).filter((v) => v !== undefined);
  const body = validated.find((v) => v.target === "json");
  const query = validated.find((v) => v.target === "query");
  const querySchema = query && schemaOf(query.schema);
  const requiredInQuery = (querySchema?.required ?? []) as string[];
  const queryParameters = querySchema
    ? Object.entries((querySchema.properties ?? {}) as Record<string, Json>).map(
        ([name, { description, ...schema }]) => ({
          name,
          in: "query",
          required: requiredInQuery.includes(name),
          description,
          schema,
        }),
      )
    : [];
  return {
    ...rest,
    parameters: [
      ...parameters,
      ...queryParameters,
      ...(usesDatabase(path) ? [{ $ref: "#/components/parameters/Bookmark" }] : []),
    ],
    ...(body && {
      requestBody: {
        required: true,
        content: { "application/json": { schema: schemaOf(body.schema), example: requestExample } },
      },
    }),
  };
}

/**
 * What the operations refer to: the shared schemas, the bookmark parameter, the security scheme. Built with the
 * document, on its first request.
 */
function components(): Json {
  return {
    schemas: {
      Note: schemaOf(Note),
      Error: { type: "object", required: ["error"], properties: { error: { type: "string" } } },
      Tokens: schemaOf(Tokens),
      Login: schemaOf(Login),
      Session: schemaOf(Session),
      Me: schemaOf(Me),
      MfaChallenge: schemaOf(MfaChallenge),
      Passkey: schemaOf(Passkey),
      PasskeyRefusal: schemaOf(PasskeyRefusal),
      RegistrationOptions: schemaOf(RegistrationOptions),
      SignInOptions: schemaOf(SignInOptions),
      Identity: schemaOf(Identity),
      OAuthRefusal: schemaOf(OAuthRefusal),
      LiveTicket: schemaOf(LiveTicket),
      AuditEvent: schemaOf(AuditEvent),
      EventPage: schemaOf(EventPage),
      AdminUser: schemaOf(AdminUser),
      AdminUserDetail: schemaOf(AdminUserDetail),
      AdminUserPage: schemaOf(AdminUserPage),
      FailedWebhook: schemaOf(FailedWebhook),
      FailedWebhookPage: schemaOf(FailedWebhookPage),
    },
    parameters: {
      Bookmark: {
        name: BOOKMARK_HEADER,
        in: "header",
        required: false,
        description:
          `The \`${BOOKMARK_HEADER}\` of your last answer (every answer that used the database carries one): the request then reads data at ` +
          "least that recent, your own writes included. Without it a read may be served by a nearby replica that lags a little. " +
          `A value that is not a bookmark is a 400: \`${AuthMessage.invalidBookmark}\` on /auth, \`{"error": "${NoteMessage.invalidBookmark}"}\` on /notes.`,
        schema: { type: "string", pattern: BOOKMARK.source },
      },
    },
    securitySchemes: {
      bearer: {
        type: "http",
        scheme: "bearer",
        bearerFormat: "JWT",
        description: "The access token of a login or refresh; needed by /notes only with NOTES_AUTH=required",
      },
      admin: {
        type: "http",
        scheme: "bearer",
        description:
          "ADMIN_TOKEN (at least 32 characters), for /admin only; no user token is accepted there, and it is accepted nowhere else",
      },
    },
  };
}

/** The document for the routes of the app (`app.routes`). */
export function openApiDocument(routes: readonly RegisteredRoute[]): Json {
  const chains = new Map<string, unknown[]>();
  for (const route of routes) {
    if (route.method === "ALL") continue;
    const key = `${route.method} ${route.path}`;
    chains.set(key, [...(chains.get(key) ?? []), route.handler]);
  }
  const paths: Record<string, Record<string, Json>> = {};
  for (const [key, handlers] of chains) {
    const described = handlers.map(operationOf).find((op) => op !== undefined);
    if (!described) continue;
    const [method, path] = key.split(" ") as [string, string];
    const openApiPath = path.replace(/:(\w+)/g, "{$1}");
    (paths[openApiPath] ??= {})[method.toLowerCase()] = operation(path, described, handlers);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Notes API",
      version: "1.0.0",
      description:
        "Account registration with e-mail verification and login (`/auth`, plain-text answers), and notes CRUD (`/notes`, JSON answers). " +
        "Send request bodies as JSON with `Content-Type: application/json`.",
    },
    servers: [{ url: "/" }],
    tags: [
      { name: "accounts" },
      { name: "notes" },
      { name: "native apps" },
      {
        name: "admin",
        description:
          "For the people who run the service, with ADMIN_TOKEN: accounts (ban, sign-out, delete), the audit log, failed webhooks. Every answer is JSON; without ADMIN_TOKEN every /admin path is a 404.",
      },
      { name: "docs" },
    ],
    components: components(),
    paths,
  };
}
