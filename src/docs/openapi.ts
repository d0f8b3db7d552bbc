import { toJsonSchema } from "@valibot/to-json-schema";
import type { GenericSchema } from "valibot";
import { AuthMessage } from "../auth/messages";
import {
  ChangeEmailBody,
  ChangePasswordBody,
  ConfirmEmailChangeBody,
  DeleteAccountBody,
  ForgotPasswordBody,
  LoginBody,
  RefreshBody,
  RegisterBody,
  ResendVerificationBody,
  ResetPasswordBody,
  VerifyEmailBody,
} from "../auth/schemas";
import { BodyMessage } from "../lib/http";
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_TTL_MS, IDEMPOTENT_REPLAYED_HEADER } from "../notes/idempotency";
import { ListQuery, MAX_PAGE_SIZE, NoteMessage, CreateNoteBody, UpdateNoteBody } from "../notes/schemas";
import { DEFAULT_SEARCH_LIMIT } from "../notes/search";

/**
 * The OpenAPI 3.1 document of the whole API. Request bodies and query parameters are converted from the
 * valibot schemas that validate them; every message comes from the constants the handlers answer with.
 * test/docs.test.ts checks that it names every route the app serves, and nothing else.
 */

type Json = Record<string, unknown>;

/** A request schema as JSON Schema 2020-12 (OpenAPI 3.1's dialect); rules code cannot express are described. */
function schemaOf(schema: GenericSchema): Json {
  const { $schema: _dialect, ...json } = toJsonSchema(schema, { target: "draft-2020-12", typeMode: "input", errorMode: "ignore" }) as Json;
  return json;
}

function jsonBody(schema: GenericSchema, example: Json): Json {
  return { required: true, content: { "application/json": { schema: schemaOf(schema), example } } };
}

/** A plain-text answer of the accounts area (or a 405): the possible bodies as an enum. */
function text(description: string, ...bodies: string[]): Json {
  return { description, content: { "text/plain": { schema: { type: "string", enum: bodies }, example: bodies[0] } } };
}

/** A JSON error answer of the notes area. */
function jsonError(description: string, ...messages: string[]): Json {
  return {
    description,
    content: {
      "application/json": {
        schema: { $ref: "#/components/schemas/Error" },
        example: { error: messages[0] },
        ...(messages.length > 1 && { examples: Object.fromEntries(messages.map((error, i) => [`e${i}`, { value: { error } }])) }),
      },
    },
  };
}

function json(description: string, schema: Json, headers?: Json): Json {
  return { description, content: { "application/json": { schema } }, ...(headers && { headers }) };
}

const retryAfter = { "Retry-After": { description: "Seconds to wait", schema: { type: "integer" } } };
const noteRef = { $ref: "#/components/schemas/Note" };
const badJson = Object.values(BodyMessage);
const idParameter = {
  name: "id",
  in: "path",
  required: true,
  description: "The note id, a decimal integer",
  schema: { type: "integer" },
};

const accountErrors = {
  "413": text("Body over 16 KiB", AuthMessage.bodyTooLarge),
  "429": { ...text("Per-client rate limit", AuthMessage.clientThrottled), headers: retryAfter },
  "500": text("Unexpected failure", AuthMessage.internalError),
};
/** The answers of an accounts endpoint that needs `Authorization: Bearer <access token>`. */
const bearerErrors = {
  "401": {
    ...text("Missing, invalid or expired access token, or its session has ended", AuthMessage.invalidAccessToken),
    headers: { "WWW-Authenticate": { description: "`Bearer`", schema: { type: "string" } } },
  },
  "500": text("Unexpected failure", AuthMessage.internalError),
};
const bearerOnly = [{ bearer: [] }];
/**
 * The answers of an endpoint that checks the caller's password first: counted on the session, which
 * ends after five wrong ones.
 */
const passwordChecked = {
  ...bearerErrors,
  "401": {
    ...text(
      "Invalid, expired or revoked access token, a session out of password checks (it ends with the fifth wrong password), or a wrong password",
      AuthMessage.invalidAccessToken,
      AuthMessage.wrongPassword,
    ),
    headers: { "WWW-Authenticate": { description: "`Bearer`, with the access-token message", schema: { type: "string" } } },
  },
  "429": { ...text("Per-client rate limit", AuthMessage.clientThrottled), headers: retryAfter },
};
const passwordRules = [AuthMessage.passwordTooShort, AuthMessage.passwordTooLong];
const tokenProperties = {
  token: { type: "string", description: "Access token: HS256 JWT with claims id (the user id, a string), sid (the session), iat, exp = iat + 3600" },
  refresh_token: { type: "string", description: "Opaque; send to POST /auth/refresh for the next pair. Single use (see /auth/refresh)." },
  expires_in: { type: "integer", description: "Seconds the access token lives: 3600" },
};
const sessionTokens = json("A new pair of tokens", { $ref: "#/components/schemas/Token" });

const notesAuth = {
  "401": { ...jsonError("Missing, invalid or expired access token, or its session has ended (only with NOTES_AUTH=required)", NoteMessage.unauthorized) },
};
const notesErrors = {
  ...notesAuth,
  "500": jsonError("Unexpected failure", NoteMessage.internalError),
};
const noteWriteErrors = {
  "413": jsonError("Body over 1 MiB", NoteMessage.bodyTooLarge),
  "429": { ...jsonError("Per-client rate limit", NoteMessage.clientThrottled), headers: retryAfter },
};
const badNoteId = jsonError("`{id}` is not an integer", NoteMessage.invalidId);
const noteNotFound = jsonError("No such note (or, with NOTES_AUTH=required, someone else's)", NoteMessage.notFound);

/** Every path of the API that uses the database takes the bookmark header (see components.parameters). */
function withBookmarks(document: Json): Json {
  const paths = document.paths as Record<string, Json>;
  for (const [path, item] of Object.entries(paths)) {
    if (!path.startsWith("/auth/") && !path.startsWith("/notes")) continue;
    item.parameters = [...((item.parameters as Json[] | undefined) ?? []), { $ref: "#/components/parameters/Bookmark" }];
  }
  return document;
}

export function openApiDocument(): Json {
  return withBookmarks({
    openapi: "3.1.0",
    info: {
      title: "Notes API",
      version: "1.0.0",
      description:
        "Account registration with e-mail verification and login (`/auth`, plain-text answers), and notes CRUD (`/notes`, JSON answers). " +
        "Send request bodies as JSON with `Content-Type: application/json`.",
    },
    servers: [{ url: "/" }],
    tags: [{ name: "accounts" }, { name: "notes" }, { name: "docs" }],
    components: {
      schemas: {
        Note: {
          type: "object",
          required: ["id", "title", "content", "created_at"],
          properties: {
            id: { type: "integer" },
            title: { type: "string", maxLength: 200 },
            content: { type: "string" },
            created_at: { type: "string", format: "date-time", description: "ISO 8601, set at creation" },
          },
        },
        Error: { type: "object", required: ["error"], properties: { error: { type: "string" } } },
        Token: { type: "object", required: Object.keys(tokenProperties), properties: tokenProperties },
        Login: {
          type: "object",
          required: [...Object.keys(tokenProperties), "device_token"],
          properties: {
            ...tokenProperties,
            device_token: {
              type: "string",
              description:
                "Opaque, good for 180 days or until the password changes: send it with this device's next logins (`device_token`), which are then judged on this device's own failed logins, not refused for the address's lock.",
            },
          },
        },
        Session: {
          type: "object",
          required: ["id", "created_at", "last_used_at", "expires_at", "user_agent", "current"],
          properties: {
            id: { type: "string" },
            created_at: { type: "string", format: "date-time", description: "The login" },
            last_used_at: { type: "string", format: "date-time", description: "The last login or refresh" },
            expires_at: { type: "string", format: "date-time", description: "30 days after the last refresh, at most 90 days after the login" },
            user_agent: { type: ["string", "null"], description: "The User-Agent of the login, at most 200 characters" },
            current: { type: "boolean", description: "True for the session of the token that asked" },
          },
        },
        Me: {
          type: "object",
          required: ["id", "email", "verified", "created_at"],
          properties: {
            id: { type: "integer" },
            email: { type: "string" },
            verified: { type: "boolean" },
            created_at: { type: "string", format: "date-time" },
          },
        },
      },
      parameters: {
        Bookmark: {
          name: "X-D1-Bookmark",
          in: "header",
          required: false,
          description:
            "The `X-D1-Bookmark` of your last answer (every answer that used the database carries one): the request then reads data at " +
            "least that recent, your own writes included. Without it a read may be served by a nearby replica that lags a little. " +
            `A value that is not a bookmark is a 400: \`${AuthMessage.invalidBookmark}\` on /auth, \`{"error": "${NoteMessage.invalidBookmark}"}\` on /notes.`,
          schema: { type: "string", pattern: "^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$" },
        },
      },
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description: "The access token of a login or refresh; needed by /notes only with NOTES_AUTH=required",
        },
      },
    },
    paths: {
      "/auth/register": {
        post: {
          tags: ["accounts"],
          summary: "Register",
          description: "Creates an unverified account and e-mails a 6-digit code valid for 15 minutes.",
          requestBody: jsonBody(RegisterBody, { email: "ada@example.com", password: "correct horse battery" }),
          responses: {
            "201": text("Created; the code is on its way", AuthMessage.userCreated),
            "400": text(
              "Malformed input",
              ...badJson,
              AuthMessage.emailAndPasswordRequired,
              AuthMessage.emailAndPasswordStrings,
              AuthMessage.invalidEmail,
              AuthMessage.passwordTooShort,
              AuthMessage.passwordTooLong,
            ),
            "409": text("E-mail already registered", AuthMessage.userExists),
            ...accountErrors,
          },
        },
      },
      "/auth/verify-email": {
        post: {
          tags: ["accounts"],
          summary: "Verify the e-mail address",
          description: "Confirms the code. Five wrong codes void it; 15 failures in an hour block verification for the hour.",
          requestBody: jsonBody(VerifyEmailBody, { email: "ada@example.com", token: "123456" }),
          responses: {
            "200": text("Verified", AuthMessage.emailVerified),
            "400": text("Missing or malformed fields", AuthMessage.emailAndTokenRequired, AuthMessage.emailAndTokenStrings, ...badJson),
            "401": text("Unknown e-mail, wrong, expired or voided code", AuthMessage.invalidToken),
            ...accountErrors,
            "429": { ...text("Too many failures, or the per-client limit", AuthMessage.verifyThrottled, AuthMessage.clientThrottled), headers: retryAfter },
          },
        },
      },
      "/auth/resend-verification": {
        post: {
          tags: ["accounts"],
          summary: "Send the verification code again",
          description: "Same answer for every well-formed request; mails only an unverified account, at most once a minute and 5 times an hour.",
          requestBody: jsonBody(ResendVerificationBody, { email: "ada@example.com" }),
          responses: {
            "200": text("Accepted", AuthMessage.resendAccepted),
            "400": text("Missing or malformed e-mail", AuthMessage.emailRequired, AuthMessage.emailString, ...badJson),
            ...accountErrors,
            "429": { ...text("Mail cooldown or hourly cap, or the per-client limit", AuthMessage.mailThrottled, AuthMessage.clientThrottled), headers: retryAfter },
          },
        },
      },
      "/auth/login": {
        post: {
          tags: ["accounts"],
          summary: "Log in",
          description:
            "Starts a session: an access token (JWT, one hour), a refresh token and a device token. Ten attempts (failed or in flight) " +
            "without a device token lock the address for 15 minutes; a valid device token of the address is judged on that device's own " +
            "attempts instead (five lock the device for 15 minutes). Any other device_token counts as none.",
          requestBody: jsonBody(LoginBody, { email: "ada@example.com", password: "correct horse battery" }),
          responses: {
            "200": json("Logged in", { $ref: "#/components/schemas/Login" }),
            "400": text("Malformed input", AuthMessage.emailAndPasswordRequired, AuthMessage.emailAndPasswordStrings, AuthMessage.invalidEmail, ...badJson),
            "401": text("Unknown e-mail or wrong password", AuthMessage.invalidCredentials),
            "403": text("E-mail not verified", AuthMessage.notVerified),
            ...accountErrors,
            "429": { ...text("Address (or device) locked, or the per-client limit", AuthMessage.loginLocked, AuthMessage.clientThrottled), headers: retryAfter },
          },
        },
      },
      "/auth/refresh": {
        post: {
          tags: ["accounts"],
          summary: "Refresh the tokens",
          description:
            "Exchanges the refresh token for a new pair (rotation). The replaced token still gives the same new pair for 10 seconds " +
            "(concurrent refreshes of one app); after that, presenting it again ends the whole session.",
          requestBody: jsonBody(RefreshBody, { refresh_token: "AAAAAAAAAAAAAAAAAAAAAA.0.…" }),
          responses: {
            "200": sessionTokens,
            "400": text("Missing or malformed field", AuthMessage.refreshTokenRequired, AuthMessage.refreshTokenString, ...badJson),
            "401": text("Malformed, unknown, replaced, expired or revoked refresh token", AuthMessage.invalidRefreshToken),
            ...accountErrors,
          },
        },
      },
      "/auth/logout": {
        post: {
          tags: ["accounts"],
          summary: "Log out",
          description: "Ends the session of the access token: its access and refresh tokens are refused from now on.",
          security: bearerOnly,
          responses: { "204": { description: "Logged out" }, ...bearerErrors },
        },
      },
      "/auth/sessions": {
        get: {
          tags: ["accounts"],
          summary: "List your sessions",
          description: "The caller's live sessions (devices), the most recently used first.",
          security: bearerOnly,
          responses: { "200": json("The sessions", { type: "array", items: { $ref: "#/components/schemas/Session" } }), ...bearerErrors },
        },
        delete: {
          tags: ["accounts"],
          summary: "End your other sessions",
          description: "Ends every session of the caller except the current one.",
          security: bearerOnly,
          responses: { "204": { description: "Ended" }, ...bearerErrors },
        },
      },
      "/auth/sessions/{id}": {
        parameters: [{ name: "id", in: "path", required: true, description: "A session id from GET /auth/sessions", schema: { type: "string" } }],
        delete: {
          tags: ["accounts"],
          summary: "End one of your sessions",
          security: bearerOnly,
          responses: {
            "204": { description: "Ended" },
            "404": text("No such session of the caller", AuthMessage.sessionNotFound),
            ...bearerErrors,
          },
        },
      },
      "/auth/me": {
        get: {
          tags: ["accounts"],
          summary: "Your account",
          security: bearerOnly,
          responses: { "200": json("The caller's account", { $ref: "#/components/schemas/Me" }), ...bearerErrors },
        },
      },
      "/auth/forgot-password": {
        post: {
          tags: ["accounts"],
          summary: "Ask for a password reset code",
          description:
            "Always the same answer, in the same time, with a new `request_id`: a known address (verified or not) gets a 6-digit reset code " +
            "valid for 15 minutes, bound to that request, mailed after the answer, within the address's reset-mail allowance: 5 an hour, " +
            "of which one client (an IPv4 address or an IPv6 /64) gets at most 2, a minute apart.",
          requestBody: jsonBody(ForgotPasswordBody, { email: "ada@example.com" }),
          responses: {
            "200": json("Accepted", {
              type: "object",
              required: ["message", "request_id"],
              properties: {
                message: { type: "string", enum: [AuthMessage.resetRequested] },
                request_id: { type: "string", description: "Opaque; send it to POST /auth/reset-password with the code this request mailed" },
              },
            }),
            "400": text("Missing or malformed e-mail", AuthMessage.emailRequired, AuthMessage.emailString, ...badJson),
            ...accountErrors,
          },
        },
      },
      "/auth/reset-password": {
        post: {
          tags: ["accounts"],
          summary: "Set a new password with the reset code",
          description:
            "Sets the password (register's rules), marks the address verified, ends every session and the login lock, and mails a notice. " +
            "The code must come with the `request_id` of the request that mailed it; five wrong tries void that code, and tries with " +
            "other request ids never touch it.",
          requestBody: jsonBody(ResetPasswordBody, {
            email: "ada@example.com",
            token: "123456",
            password: "a new long password",
            request_id: "q7Vb0c2JmXWb1b4u5mJx8A",
          }),
          responses: {
            "200": text("Password set", AuthMessage.passwordReset),
            "400": text(
              "Missing or malformed fields",
              AuthMessage.resetFieldsRequired,
              AuthMessage.resetFieldsStrings,
              AuthMessage.requestIdRequired,
              AuthMessage.requestIdString,
              ...passwordRules,
              ...badJson,
            ),
            "401": text("Unknown e-mail or request id, wrong, expired or voided code", AuthMessage.invalidResetCode),
            ...accountErrors,
          },
        },
      },
      "/auth/change-password": {
        post: {
          tags: ["accounts"],
          summary: "Change your password",
          description: "Needs the current password. Ends every other session and mails a notice.",
          security: bearerOnly,
          requestBody: jsonBody(ChangePasswordBody, { current_password: "correct horse battery", new_password: "a new long password" }),
          responses: {
            "200": text("Changed", AuthMessage.passwordChanged),
            "400": text("Missing or malformed fields", AuthMessage.changePasswordRequired, AuthMessage.changePasswordStrings, ...passwordRules, ...badJson),
            ...passwordChecked,
          },
        },
      },
      "/auth/change-email": {
        post: {
          tags: ["accounts"],
          summary: "Ask to change your e-mail address",
          description: "Needs the password; mails a 6-digit code to the new address (valid 15 minutes), within the account's mail allowance.",
          security: bearerOnly,
          requestBody: jsonBody(ChangeEmailBody, { password: "correct horse battery", new_email: "ada@new.example" }),
          responses: {
            "200": text("Code sent", AuthMessage.emailChangeSent),
            "400": text(
              "Missing or malformed fields, or the current address",
              AuthMessage.changeEmailRequired,
              AuthMessage.changeEmailStrings,
              AuthMessage.invalidEmail,
              AuthMessage.sameEmail,
              ...badJson,
            ),
            "409": text("The new address belongs to another account", AuthMessage.userExists),
            ...passwordChecked,
            "429": {
              ...text(
                "Mail allowance used up, or the per-client limit",
                AuthMessage.emailChangeThrottled,
                AuthMessage.clientThrottled,
              ),
              headers: retryAfter,
            },
          },
        },
      },
      "/auth/confirm-email-change": {
        post: {
          tags: ["accounts"],
          summary: "Confirm the new e-mail address",
          description: "Switches the address to the one the code was mailed to, mails a notice to the old one, and ends every other session.",
          security: bearerOnly,
          requestBody: jsonBody(ConfirmEmailChangeBody, { token: "123456" }),
          responses: {
            "200": text("Changed", AuthMessage.emailChanged),
            "400": text("Missing or malformed token", AuthMessage.tokenRequired, AuthMessage.tokenString, ...badJson),
            "401": text("Wrong, expired or voided code, or an invalid access token", AuthMessage.invalidConfirmationCode, AuthMessage.invalidAccessToken),
            "409": text("The address was registered by someone else meanwhile", AuthMessage.userExists),
            ...accountErrors,
            "429": { ...text("Too many tries, or the per-client limit", AuthMessage.codeThrottled, AuthMessage.clientThrottled), headers: retryAfter },
          },
        },
      },
      "/auth/account": {
        delete: {
          tags: ["accounts"],
          summary: "Delete your account",
          description: "Needs the password. Deletes the account, its sessions, codes and notes at once; every token dies.",
          security: bearerOnly,
          requestBody: jsonBody(DeleteAccountBody, { password: "correct horse battery" }),
          responses: {
            "204": { description: "Deleted" },
            "400": text("Missing or malformed password", AuthMessage.passwordRequired, AuthMessage.passwordString, ...badJson),
            ...passwordChecked,
          },
        },
      },
      "/notes": {
        get: {
          tags: ["notes"],
          summary: "List or search notes",
          description:
            `All notes by id ascending; with \`limit\` (1 to ${MAX_PAGE_SIZE}) one page, and a \`Link: <…>; rel="next"\` header when more exist. ` +
            `With \`q\`, a search: the notes whose title or content contain every word, best match first (a title match ranks above a content match), ` +
            `${DEFAULT_SEARCH_LIMIT} per page unless \`limit\` says otherwise (fewer when the notes are large), the next page in \`Link\` (with \`offset\`).`,
          security: [{}, { bearer: [] }],
          parameters: Object.entries((schemaOf(ListQuery).properties ?? {}) as Record<string, Json>).map(([name, schema]) => ({
            name,
            in: "query",
            required: false,
            description: schema.description,
            schema: { type: name === "q" ? "string" : "integer" },
          })),
          responses: {
            "200": json("The notes", { type: "array", items: noteRef }, { Link: { description: "The next page, when paging", schema: { type: "string" } } }),
            "400": jsonError(
              "Bad paging or search parameters",
              `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`,
              "after must be an integer",
              NoteMessage.searchEmpty,
              "offset must be an integer of at least 0",
            ),
            ...notesErrors,
          },
        },
        post: {
          tags: ["notes"],
          summary: "Create a note",
          description:
            `With \`${IDEMPOTENCY_KEY_HEADER}\` the request can be retried safely for ${IDEMPOTENCY_KEY_TTL_MS / 3_600_000} hours: the first creates the note, ` +
            `a repeat with the same key and the same title and content creates nothing and gets the first answer again, byte for byte, with ` +
            `\`${IDEMPOTENT_REPLAYED_HEADER}: true\`. Keys belong to the caller (to the user with NOTES_AUTH=required). ` +
            "A repeat sent while the first is being processed waits for it and gets the replay.",
          security: [{}, { bearer: [] }],
          parameters: [
            {
              name: IDEMPOTENCY_KEY_HEADER,
              in: "header",
              required: false,
              description: "1 to 255 visible ASCII characters, e.g. a UUID, new for each note the client means to create; taken as it is (quotes included)",
              schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e]+$" },
            },
          ],
          requestBody: jsonBody(CreateNoteBody, { title: "First", content: "Hello" }),
          responses: {
            "201": json("Created, or (with `Idempotent-Replayed: true`) the stored answer to the key's first request", noteRef, {
              [IDEMPOTENT_REPLAYED_HEADER]: { description: "`true` on a replay", schema: { type: "string", enum: ["true"] } },
            }),
            "409": jsonError(`The \`${IDEMPOTENCY_KEY_HEADER}\`'s first request has not finished`, NoteMessage.idempotencyKeyInProgress),
            "422": jsonError(`The \`${IDEMPOTENCY_KEY_HEADER}\` was used with another title or content`, NoteMessage.idempotencyKeyReused),
            "400": jsonError(
              "Malformed input",
              NoteMessage.invalidIdempotencyKey,
              NoteMessage.titleRequired,
              NoteMessage.contentRequired,
              NoteMessage.titleEmpty,
              NoteMessage.titleTooLong,
              ...badJson,
            ),
            ...noteWriteErrors,
            ...notesErrors,
          },
        },
      },
      "/notes/{id}": {
        parameters: [idParameter],
        get: {
          tags: ["notes"],
          summary: "Read a note",
          security: [{}, { bearer: [] }],
          responses: { "200": json("The note", noteRef), "400": badNoteId, "404": noteNotFound, ...notesErrors },
        },
        patch: {
          tags: ["notes"],
          summary: "Update a note partially",
          description: "Changes only the fields present; `{}` changes nothing and returns the note.",
          security: [{}, { bearer: [] }],
          requestBody: jsonBody(UpdateNoteBody, { content: "Hello again" }),
          responses: {
            "200": json("The note after the update", noteRef),
            "400": jsonError(
              "Bad id or malformed input",
              NoteMessage.invalidId,
              NoteMessage.titleNotString,
              NoteMessage.contentNotString,
              NoteMessage.titleEmpty,
              NoteMessage.titleTooLong,
              ...badJson,
            ),
            "404": noteNotFound,
            ...noteWriteErrors,
            ...notesErrors,
          },
        },
        delete: {
          tags: ["notes"],
          summary: "Delete a note",
          security: [{}, { bearer: [] }],
          responses: { "204": { description: "Deleted" }, "400": badNoteId, "404": noteNotFound, "429": noteWriteErrors["429"], ...notesErrors },
        },
      },
      "/": {
        get: {
          tags: ["docs"],
          summary: "Redirects to /docs",
          responses: { "302": { description: "To the interactive reference", headers: { Location: { description: "`/docs`", schema: { type: "string" } } } } },
        },
      },
      "/openapi.json": {
        get: { tags: ["docs"], summary: "This document", responses: { "200": json("OpenAPI 3.1", { type: "object" }) } },
      },
      "/docs": {
        get: {
          tags: ["docs"],
          summary: "Interactive reference",
          responses: { "200": { description: "HTML page", content: { "text/html": { schema: { type: "string" } } } } },
        },
      },
    },
  });
}
