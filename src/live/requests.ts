import { TICKET_TTL_MS } from "./protocol";
import * as v from "valibot";
import { LiveMessage } from "./messages";
import { SECOND } from "../lib/units";
import { body } from "../lib/validation";

/** The answer of POST /changes/live-ticket. */
export const LiveTicket = v.object({
  ticket: v.pipe(v.string(), v.description("Single use: open GET /changes/live?ticket=… with it")),
  expires_in: v.pipe(v.number(), v.description(`Seconds it stays good: ${TICKET_TTL_MS / SECOND}`)),
});
export type LiveTicketJson = v.InferOutput<typeof LiveTicket>;

/** The query of GET /changes/live. */
export const LiveQuery = body({
  ticket: v.pipe(
    v.string(LiveMessage.ticketRequired),
    v.description("A ticket from POST /changes/live-ticket, unused and not expired, of a session that is still live"),
  ),
});
