import { badRequest } from "../lib/http";

export const MAX_TITLE_CHARS = 200;

/** Every JSON error message of the notes area. */
export const NoteMessage = {
  // From the spec.
  invalidId: "Invalid note id",
  notFound: "Note not found",
  // Our decisions where the spec is silent (see the README).
  titleRequired: "title is required and must be a string",
  contentRequired: "content is required and must be a string",
  titleNotString: "title must be a string",
  contentNotString: "content must be a string",
  titleEmpty: "title must not be empty",
  titleTooLong: `title must be at most ${MAX_TITLE_CHARS} characters`,
  bodyTooLarge: "Request body is too large (limit 1 MiB)",
  clientThrottled: "Too many requests",
  internalError: "Internal server error",
} as const;

const DECIMAL_INTEGER = /^-?\d+$/;

/** The `{id}` path segment as a safe integer, or the spec's 400. */
export function parseNoteId(raw: string): number {
  const id = Number(raw);
  if (!DECIMAL_INTEGER.test(raw) || !Number.isSafeInteger(id)) throw badRequest(NoteMessage.invalidId);
  return id;
}

function checkTitle(title: string): string {
  if (title.trim() === "") throw badRequest(NoteMessage.titleEmpty);
  // Characters are Unicode code points, so an emoji counts once.
  if ([...title].length > MAX_TITLE_CHARS) throw badRequest(NoteMessage.titleTooLong);
  return title;
}

export function readNewNote(body: Record<string, unknown>): { title: string; content: string } {
  const { title, content } = body;
  if (typeof title !== "string") throw badRequest(NoteMessage.titleRequired);
  if (typeof content !== "string") throw badRequest(NoteMessage.contentRequired);
  return { title: checkTitle(title), content };
}

/** The fields a PATCH sets: only those present; anything else in the body is ignored. */
export function readNoteChanges(body: Record<string, unknown>): { title?: string; content?: string } {
  const changes: { title?: string; content?: string } = {};
  if (body.title !== undefined) {
    if (typeof body.title !== "string") throw badRequest(NoteMessage.titleNotString);
    changes.title = checkTitle(body.title);
  }
  if (body.content !== undefined) {
    if (typeof body.content !== "string") throw badRequest(NoteMessage.contentNotString);
    changes.content = body.content;
  }
  return changes;
}
