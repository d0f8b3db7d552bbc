/**
 * The audit log's event types (item 7 of issue 46: fixed), here under the areas because a setting names them too
 * (WEBHOOK_EVENTS, checked in src/config/). The areas take them from audit/events.ts.
 */
export const EVENT_TYPES = [
  "user.registered",
  "user.verified",
  "user.signed_in",
  "user.sign_in_failed",
  "user.password_changed",
  "user.password_reset",
  "user.email_changed",
  "user.email_change_reverted",
  "mfa.enabled",
  "mfa.disabled",
  "passkey.added",
  "passkey.removed",
  "identity.linked",
  "identity.unlinked",
  "session.revoked",
  "user.deleted",
  "user.banned",
  "user.unbanned",
  "user.signed_out_by_admin",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}
