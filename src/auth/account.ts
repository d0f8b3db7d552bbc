import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { sessions, users } from "../db/schema";
import type { AppEnv } from "../types";
import { callerSession, requireAccessToken, unauthorized } from "./session-store";

/** The logged-in user's own account. */
export const account = new Hono<AppEnv>().get("/me", requireAccessToken, async (c) => {
  const caller = c.var.caller!;
  // The session is checked in the same query: a revoked session's token reads nothing.
  const [user] = await c.var.db
    .select({ id: users.id, email: users.email, isVerified: users.isVerified, createdAt: users.createdAt })
    .from(users)
    .innerJoin(sessions, eq(sessions.userId, users.id))
    .where(callerSession(caller, Date.now()));
  if (!user) return unauthorized(c);
  return c.json({ id: user.id, email: user.email, verified: user.isVerified, created_at: new Date(user.createdAt).toISOString() }, 200);
});
