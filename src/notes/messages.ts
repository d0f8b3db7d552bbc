import { MiB } from "../lib/units";

/** Every JSON error message the notes area answers with, written once; /openapi.json lists each with its status. */

/** The most characters (code points) a title holds: here, since its message states it; requests.ts enforces it. */
export const MAX_TITLE_CHARS = 200;
/**
 * The longest search (`q`) in characters (code points), and the most words it may hold, a quoted phrase's
 * included: what a search costs grows with its words (docs/performance.md).
 */
export const MAX_SEARCH_CHARS = 200;
export const MAX_SEARCH_WORDS = 12;

/** Note content is unbounded by the contract; 1 MiB keeps a row well under D1's 2 MB row limit. */
export const NOTES_BODY_LIMIT_BYTES = MiB;

/** The most characters an Idempotency-Key holds: here, since its message states it. */
export const MAX_IDEMPOTENCY_KEY_CHARS = 255;

export const NoteMessage = {
  // From the spec.
  invalidId: "Invalid note id",
  notFound: "Note not found",
  // Our decisions where the spec is silent.
  titleRequired: "title is required and must be a string",
  contentRequired: "content is required and must be a string",
  titleNotString: "title must be a string",
  contentNotString: "content must be a string",
  titleEmpty: "title must not be empty",
  titleTooLong: `title must be at most ${MAX_TITLE_CHARS} characters`,
  bodyTooLarge: `Request body is too large (limit ${NOTES_BODY_LIMIT_BYTES / MiB} MiB)`,
  invalidBookmark: "Invalid X-D1-Bookmark header",
  clientThrottled: "Too many requests",
  unauthorized: "Unauthorized",
  invalidIdempotencyKey: `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_CHARS} visible ASCII characters`,
  idempotencyKeyReused: "This Idempotency-Key was already used with a different request",
  searchEmpty: "q must not be empty",
  searchTooLong: `q must be at most ${MAX_SEARCH_CHARS} characters`,
  searchTooManyWords: `q must hold at most ${MAX_SEARCH_WORDS} words (a quoted phrase counts each of its words)`,
  searchThrottled: "Too many searches",
  idempotencyKeyInProgress: "A request with this Idempotency-Key is still being processed; retry it shortly",
  invalidIfMatch: "If-Match must be * or a list of entity tags",
  invalidIfNoneMatch: "If-None-Match must be * or a list of entity tags",
  preconditionFailed: "The note has changed since the ETag given in If-Match; the ETag header holds its current one",
  ifMatchRequired: "This request needs an If-Match header with the note's ETag (NOTES_REQUIRE_IF_MATCH)",
  invalidCursor: "cursor is not a cursor of this feed",
  cursorExpired: "This cursor is older than the changes kept; sync again from the start, without a cursor",
  viewerCannotChange: "This note is shared with you as a viewer: you may read it, not change it",
  onlyOwnerDeletes:
    "Only the note's owner may delete it; a note shared with you can be left instead (DELETE its share)",
  sharedNeedsAccounts: "shared=true lists the notes shared with you: it needs accounts (NOTES_AUTH=required)",
  sharedWithSearch: "shared cannot be combined with q: search looks in your own notes",
  internalError: "Internal server error",
} as const;
