import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { ConfigError } from "../config";
import { loginFailures, users } from "../db/schema";
import { tooManyRequests } from "../lib/http";
import { signLoginToken } from "../lib/jwt";
import { maskEmail } from "../lib/log";
import { verifyPassword } from "../lib/password";
import { jsonBody } from "../lib/validation";
import type { AppEnv } from "../types";
import { claimLogin, LOGIN_LOCK_MS, releaseLogin } from "./limits";
import { AuthMessage } from "./messages";
import { LoginBody } from "./schemas";

export const login = new Hono<AppEnv>().post("/login", jsonBody(LoginBody), async (c) => {
  const { email, password } = c.req.valid("json");
  const { config, db, log } = c.var;
  const now = Date.now();

  // One round trip: claim the attempt (before bcrypt, see claimLogin), read the account, and read the
  // lock as the claim left it, for Retry-After. Attempts are kept per address, registered or not, so
  // an unknown address is answered (and locked) exactly like a real one.
  const [[claim], [user], [lock]] = await db.batch([
    claimLogin(db, email, now),
    db.select({ id: users.id, password: users.password, isVerified: users.isVerified }).from(users).where(eq(users.email, email)),
    db.select({ lockedUntil: loginFailures.lockedUntil }).from(loginFailures).where(eq(loginFailures.email, email)),
  ]);
  if (!claim) return tooManyRequests(c, (lock?.lockedUntil ?? now + LOGIN_LOCK_MS) - now, AuthMessage.loginLocked);
  if (claim.lockedUntil > 0) log.warn("login_locked", { email: maskEmail(email), lockedForMs: LOGIN_LOCK_MS });

  // The password is checked first: an unverified account with a wrong password is a 401, not a 403.
  // A failure needs no further write: the claim has counted it.
  if (!(await verifyPassword(password, user?.password, config.bcryptCost)) || !user) {
    return c.text(AuthMessage.invalidCredentials, 401);
  }
  // The right password ends the run of attempts.
  await releaseLogin(db, email, claim.lockedUntil);

  if (!user.isVerified) return c.text(AuthMessage.notVerified, 403);
  if (!config.jwtSecret) throw new ConfigError("JWT_SECRET_KEY is not set; cannot sign login tokens");
  return c.json({ token: await signLoginToken(user.id, config.jwtSecret, log) }, 200);
});
