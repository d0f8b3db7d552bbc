import { toJsonSchema } from "@valibot/to-json-schema";
import type { MiddlewareHandler } from "hono";
import type { GenericSchema } from "valibot";
import { BodyMessage } from "./http";

/**
 * Routes that document themselves: each route carries its OpenAPI operation in its own chain,
 * `.post("/login", describeRoute({...}), jsonBody(LoginBody), handler)`, and openapi.ts builds the document
 * by walking the app's registered routes. A route without a description is missing from /openapi.json,
 * which test/openapi/routes.test.ts catches. Below are the fragments operations share, written once.
 */

export type Json = Record<string, unknown>;

/** An OpenAPI operation as a route describes it; the request body and query come from its validators. */
export interface Operation {
  tags: string[];
  summary: string;
  description?: string;
  security?: Json[];
  parameters?: Json[];
  /** An example of the JSON request body; its schema comes from the route's `jsonBody` validator. */
  requestExample?: Json;
  /** A request body that is not JSON (an upload's bytes), described as it is. */
  requestBody?: Json;
  responses: Record<string, Json>;
}

const OPERATION = Symbol("openapi operation");

/** A middleware that does nothing but carry `operation` for the document. */
export function describeRoute(operation: Operation): MiddlewareHandler {
  const carrier: MiddlewareHandler = async (_c, next) => {
    await next();
  };
  return Object.assign(carrier, { [OPERATION]: operation });
}

/** The operation a handler of a route carries, if it is a describeRoute middleware. */
export function operationOf(handler: unknown): Operation | undefined {
  return typeof handler === "function" && OPERATION in handler ? (handler[OPERATION] as Operation) : undefined;
}

/** A valibot schema as JSON Schema 2020-12 (OpenAPI 3.1's dialect); rules code cannot express are described. */
export function schemaOf(schema: GenericSchema): Json {
  const { $schema: _dialect, ...json } = toJsonSchema(schema, {
    target: "draft-2020-12",
    typeMode: "input",
    errorMode: "ignore",
  }) as Json;
  return json;
}

/** A plain-text answer (accounts area, 405): the possible bodies as an enum. */
export function text(description: string, ...bodies: string[]): Json {
  return { description, content: { "text/plain": { schema: { type: "string", enum: bodies }, example: bodies[0] } } };
}

/**
 * A JSON error answer of the notes area, `{"error": …}`: one message as the `example`, several as
 * `examples` (OpenAPI allows a media type one or the other, not both).
 */
export function jsonError(description: string, ...messages: string[]): Json {
  const media =
    messages.length === 1
      ? { example: { error: messages[0] } }
      : { examples: Object.fromEntries(messages.map((error, i) => [`e${i}`, { value: { error } }])) };
  return { description, content: { "application/json": { schema: { $ref: "#/components/schemas/Error" }, ...media } } };
}

/** A JSON answer. */
export function json(description: string, schema: Json, headers?: Json): Json {
  return { description, content: { "application/json": { schema } }, ...(headers && { headers }) };
}

/** A component schema by name. */
export const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

export const retryAfter = { "Retry-After": { description: "Seconds to wait", schema: { type: "integer" } } };

/** A 429 with `Retry-After`. */
export function throttled(response: Json): Json {
  return { ...response, headers: retryAfter };
}

/** The 400 messages of a body that is not a JSON object, the same on every endpoint that takes one. */
export const badJson = Object.values(BodyMessage);

/** `security` of an endpoint that needs `Authorization: Bearer <access token>`. */
export const bearerOnly = [{ bearer: [] }];
