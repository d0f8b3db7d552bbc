import type { MiddlewareHandler } from "hono";
import * as v from "valibot";
import type { AppEnv } from "../types";
import { badRequest, readJsonObject } from "./http";

type ObjectSchema = v.GenericSchema<Record<string, unknown>, Record<string, unknown>>;

const VALIDATES = Symbol("validated part and schema");

/** What a validator checks, for /openapi.json: the request's JSON body or query, and the schema. */
export interface Validated {
  target: "json" | "query";
  schema: v.GenericSchema;
}

function validates<H extends MiddlewareHandler>(target: Validated["target"], schema: v.GenericSchema, handler: H): H {
  return Object.assign(handler, { [VALIDATES]: { target, schema } });
}

/** The part and schema a route handler validates, if it is one of the validators below. */
export function validatedBy(handler: unknown): Validated | undefined {
  return typeof handler === "function" && VALIDATES in handler ? (handler[VALIDATES] as Validated) : undefined;
}

/**
 * Validates the JSON body against `schema` and hands the result to the handler as `c.req.valid("json")`.
 * The body is read by our own parser (any content type, precise messages for malformed JSON); the first
 * failed rule's message is the 400's message. The schema is also what /openapi.json documents, and what
 * types `hc<AppType>()` calls.
 */
export function jsonBody<S extends ObjectSchema>(
  schema: S,
): MiddlewareHandler<AppEnv, string, { in: { json: v.InferInput<S> }; out: { json: v.InferOutput<S> } }> {
  return validates("json", schema, async (c, next) => {
    const result = v.safeParse(schema, await readJsonObject(c), { abortEarly: true });
    if (!result.success) throw badRequest(result.issues[0].message);
    c.req.addValidatedData("json", result.output);
    await next();
  });
}

/** Validates the query string against `schema`: `c.req.valid("query")`, typed for the client too. */
export function queryParams<S extends v.GenericSchema<Record<string, string | undefined>, Record<string, unknown>>>(
  schema: S,
): MiddlewareHandler<AppEnv, string, { in: { query: v.InferInput<S> }; out: { query: v.InferOutput<S> } }> {
  return validates("query", schema, async (c, next) => {
    const result = v.safeParse(schema, c.req.query(), { abortEarly: true });
    if (!result.success) throw badRequest(result.issues[0].message);
    c.req.addValidatedData("query", result.output);
    await next();
  });
}

/**
 * `v.object`, except that a missing key is reported with the message its own schema gives for
 * `undefined` (valibot otherwise reports missing keys with one generic message).
 */
export function body<const E extends v.ObjectEntries>(entries: E) {
  return v.object(entries, (issue) => {
    const key = issue.path?.[0]?.key;
    const schema = typeof key === "string" ? entries[key] : undefined;
    const result = schema ? v.safeParse(schema, undefined) : undefined;
    return result && !result.success ? result.issues[0].message : issue.message;
  });
}

function isBlank(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === "string" && value.trim() === "");
}

/** A string field: `required` when absent, null or blank, `notString` when of another type. */
export function requiredString(required: string, notString: string) {
  return v.pipe(
    v.string((issue) => (isBlank(issue.input) ? required : notString)),
    v.check((value) => value.trim() !== "", required),
  );
}
