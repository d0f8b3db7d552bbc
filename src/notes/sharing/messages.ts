import { MAX_LINKS_PER_NOTE, MAX_SHARES_PER_NOTE, NEW_SHARE_ADDRESSES_PER_DAY, SHARE_BODY_LIMIT_BYTES } from "./policy";

/** Every JSON error message of the sharing routes, written once (docs/sharing.md). */
export const SharingMessage = {
  needsAccounts: "Sharing needs accounts (NOTES_AUTH=required): with public notes every note is already everyone's",
  ownerOnly: "Only the note's owner may share it or make links to it",
  ownerOnlyRole: "Only the note's owner may change a share's role",
  tooManyLinks: `A note has at most ${MAX_LINKS_PER_NOTE} live links: revoke one first`,
  linkNotFound: "Link not found",
  sharedNotFound: "No note is shared at this link",
  sharedThrottled: "Too many requests for shared notes",
  shareNotFound: "Share not found",
  shareWithSelf: "You cannot share a note with yourself",
  alreadyShared: "This note is already shared with this address",
  tooManyShares: `A note is shared with at most ${MAX_SHARES_PER_NOTE} addresses: remove a share first`,
  tooManyAddresses: `You have shared notes with ${NEW_SHARE_ADDRESSES_PER_DAY} new addresses in the last day; try again later`,
  emailRequired: "email is required and must be a string",
  emailNotString: "email must be a string",
  invalidEmail: "email must be an address such as name@example.com",
  bodyTooLarge: `Request body is too large (limit ${SHARE_BODY_LIMIT_BYTES / 1024} KiB)`,
  roleRequired: 'role is required and must be "viewer" or "editor"',
  invalidRole: 'role must be "viewer" or "editor"',
} as const;
