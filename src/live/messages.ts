/** Every JSON error message of the live-updates routes, written once (/openapi.json lists them per operation). */
export const LiveMessage = {
  notAvailable: "Live updates need private notes (NOTES_AUTH=required)",
  upgradeRequired: "This is a WebSocket endpoint: open it with Upgrade: websocket",
  originRefused: "This Origin may not open live updates (it is not in CORS_ORIGINS)",
  ticketRequired: "ticket is required: ask POST /changes/live-ticket for one",
  invalidTicket: "The ticket is unknown, used or expired, or its session has ended: ask for a new one",
  tooManySockets: "This account has as many live sockets open as it may: close one first",
} as const;
