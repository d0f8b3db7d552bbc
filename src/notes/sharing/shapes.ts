import * as v from "valibot";
import { normalizeEmail, plausibleEmail } from "../../auth/caller";
import { body, requiredString } from "../../lib/validation";
import { MAX_TITLE_CHARS } from "../messages";
import { SharingMessage } from "./messages";
import { LINK_TOKEN_BYTES } from "./policy";
import { SHARE_ROLES } from "./schema";

/** The request and answer shapes of sharing: the handlers' types and the OpenAPI schemas derive from these. */

const createdAt = v.pipe(v.string(), v.isoTimestamp(), v.description("ISO 8601, when it was made"));
const id = v.pipe(v.string(), v.description("Opaque, 22 characters (128 random bits, base64url)"));

/** A public link as its list shows it: the token is stored hashed and shown only once, when the link is made. */
export const Link = v.object({ id, created_at: createdAt });
export type LinkJson = v.InferOutput<typeof Link>;

/** A new public link: the token, and the whole URL to hand out. */
export const NewLink = v.object({
  id,
  token: v.pipe(
    v.string(),
    v.description(
      `${LINK_TOKEN_BYTES * 8} random bits, base64url (${Math.ceil((LINK_TOKEN_BYTES * 8) / 6)} characters). Shown only here: the service keeps its hash`,
    ),
  ),
  url: v.pipe(v.string(), v.description("`<origin>/shared/<token>`: opens the note without an account")),
  created_at: createdAt,
});
export type NewLinkJson = v.InferOutput<typeof NewLink>;

/** What a public link shows of its note, and nothing else. */
export const SharedNote = v.object({
  title: v.pipe(v.string(), v.maxLength(MAX_TITLE_CHARS)),
  content: v.string(),
  created_at: v.pipe(v.string(), v.isoTimestamp(), v.description("ISO 8601, when the note was made")),
  updated_at: v.pipe(
    v.string(),
    v.isoTimestamp(),
    v.description("ISO 8601, when its title or content last changed (`created_at` until then)"),
  ),
});
export type SharedNoteJson = v.InferOutput<typeof SharedNote>;

const role = v.pipe(
  v.picklist(SHARE_ROLES, (issue) =>
    issue.input === undefined ? SharingMessage.roleRequired : SharingMessage.invalidRole,
  ),
  v.description("`viewer` reads the note and its attachments; `editor` also changes them (never deletes the note)"),
);

/** A share: the address it was made to (normalized) and its role. */
export const Share = v.object({
  id,
  email: v.pipe(v.string(), v.description("The address, trimmed, in Unicode NFC and lowercased")),
  role,
  created_at: createdAt,
});
export type ShareJson = v.InferOutput<typeof Share>;

/** POST /notes/{id}/shares. */
export const ShareBody = body({
  email: v.pipe(
    requiredString(SharingMessage.emailRequired, SharingMessage.emailNotString),
    v.transform(normalizeEmail),
    v.check(plausibleEmail, SharingMessage.invalidEmail),
    v.description("The address to share with; compared trimmed, in Unicode NFC and lowercased."),
  ),
  role,
});

/** PATCH /notes/{id}/shares/{shareId}. */
export const RoleBody = body({ role });
