import * as v from "valibot";
import { badRequest } from "../lib/http";
import { body } from "../lib/validation";
import { MAX_SEARCH_CHARS, MAX_SEARCH_WORDS, MAX_TITLE_CHARS, NoteMessage } from "./messages";
import { countWords } from "./search";

/** The request and response schemas of the notes area: bodies, the id and paging rules, the note JSON. */

/** A title: `typeMessage` when it is not a string, then the length rules. */
function title(typeMessage: string) {
  return v.pipe(
    v.string(typeMessage),
    v.check((text) => text.trim() !== "", NoteMessage.titleEmpty),
    // Characters are Unicode code points, so an emoji counts once.
    v.check((text) => [...text].length <= MAX_TITLE_CHARS, NoteMessage.titleTooLong),
    v.description(`1 to ${MAX_TITLE_CHARS} characters (Unicode code points), not only white space.`),
  );
}

export const CreateNoteBody = body({
  title: title(NoteMessage.titleRequired),
  content: v.pipe(v.string(NoteMessage.contentRequired), v.description("Any text, empty included.")),
});

/** Only the fields present change; `id`, `created_at` and unknown fields are ignored. */
export const UpdateNoteBody = body({
  title: v.optional(title(NoteMessage.titleNotString)),
  content: v.optional(v.string(NoteMessage.contentNotString)),
});

const DECIMAL_INTEGER = /^-?\d+$/;

/** A decimal integer within JavaScript's safe range, or undefined. */
export function safeInteger(raw: string): number | undefined {
  const value = Number(raw);
  return DECIMAL_INTEGER.test(raw) && Number.isSafeInteger(value) ? value : undefined;
}

/** The `{id}` path segment as a safe integer, or the spec's 400. */
export function parseNoteId(raw: string): number {
  const id = safeInteger(raw);
  if (id === undefined) throw badRequest(NoteMessage.invalidId);
  return id;
}

export const MAX_PAGE_SIZE = 100;

/**
 * `GET /notes` query: without `limit` the whole list (the spec's answer); with `limit` (1..100) one page,
 * optionally after the id `after`. With `q`, a search (notes/search.ts): pages of `limit` (default 20)
 * ranked notes, the next one from `offset`.
 */
export const ListQuery = v.pipe(
  v.object({
    limit: v.optional(
      v.pipe(
        v.string(),
        v.check(
          (raw) => (safeInteger(raw) ?? 0) >= 1 && (safeInteger(raw) ?? 0) <= MAX_PAGE_SIZE,
          `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`,
        ),
        v.description(`Page size, 1 to ${MAX_PAGE_SIZE}. Without it the whole list is returned.`),
        v.transform(Number),
      ),
    ),
    after: v.optional(
      v.pipe(
        v.string(),
        v.check((raw) => safeInteger(raw) !== undefined, "after must be an integer"),
        v.description("Return notes with ids greater than this (the last id of the previous page)."),
        v.transform(Number),
      ),
    ),
    q: v.optional(
      v.pipe(
        v.string(),
        v.check((raw) => raw.trim() !== "", NoteMessage.searchEmpty),
        v.check((raw) => [...raw].length <= MAX_SEARCH_CHARS, NoteMessage.searchTooLong),
        v.check((raw) => countWords(raw) <= MAX_SEARCH_WORDS, NoteMessage.searchTooManyWords),
        v.description(
          'Search: the notes whose title or content contain every word (any case or accent; the last word may be the start of a word), title matches first, then the newest. "A quoted phrase" matches as a phrase; every other character is plain text. ' +
            `At most ${MAX_SEARCH_CHARS} characters and ${MAX_SEARCH_WORDS} words (a phrase counts each of its words).`,
        ),
      ),
    ),
    shared: v.optional(
      v.pipe(
        v.picklist(["true", "false"], "shared must be true or false"),
        v.description(
          "`true`: the notes other accounts shared with you (NOTES_AUTH=required), paged like the list; `false` or absent: your own.",
        ),
        v.transform((raw) => raw === "true"),
      ),
    ),
    offset: v.optional(
      v.pipe(
        v.string(),
        v.check((raw) => (safeInteger(raw) ?? -1) >= 0, "offset must be an integer of at least 0"),
        v.description("With q: how many ranked notes to skip (the next page's Link carries it)."),
        v.transform(Number),
      ),
    ),
  }),
  v.check(
    (query) => query.after === undefined || query.limit !== undefined,
    "after is only allowed together with limit",
  ),
  v.check(
    (query) => query.q === undefined || query.after === undefined,
    "after cannot be combined with q; search pages use offset",
  ),
  v.check((query) => query.offset === undefined || query.q !== undefined, "offset is only allowed together with q"),
  v.check((query) => !(query.shared === true && query.q !== undefined), NoteMessage.sharedWithSearch),
);

/**
 * A note as the API shows it, with the contract's field names (the owner is never shown): the TypeScript
 * type (and so the typed client) and the OpenAPI schema both derive from this.
 */
export const Note = v.object({
  id: v.pipe(v.number(), v.integer()),
  title: v.pipe(v.string(), v.maxLength(MAX_TITLE_CHARS)),
  content: v.string(),
  created_at: v.pipe(
    v.string(),
    v.isoTimestamp(),
    v.description("ISO 8601 (`Date.prototype.toISOString()`), set at creation"),
  ),
});
export type NoteJson = v.InferOutput<typeof Note>;
