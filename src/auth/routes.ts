import { and, eq, gt, lt, sql } from "drizzle-orm";
import { Hono } from "hono";
import { ConfigError } from "../config";
import { users } from "../db/schema";
import { CODE_TTL_MS, codesMatch, generateVerificationCode, MAX_CODE_ATTEMPTS } from "../lib/codes";
import { methodNotAllowed, readJsonObject } from "../lib/http";
import { signLoginToken } from "../lib/jwt";
import { sendVerificationEmail } from "../lib/mail";
import { hashPassword, verifyPassword } from "../lib/password";
import type { AppEnv } from "../types";
import { checkNewAccount, readCredentials, readVerification } from "./input";
import { AuthMessage } from "./messages";

export const auth = new Hono<AppEnv>()
  .post("/register", async (c) => {
    const { email, password } = readCredentials(await readJsonObject(c));
    checkNewAccount(email, password);
    const { config, db, log } = c.var;

    const code = generateVerificationCode();
    // The unique index on e-mail decides between concurrent registrations, not a prior read.
    const [created] = await db
      .insert(users)
      .values({
        email,
        password: await hashPassword(password, config.bcryptCost),
        isVerified: false,
        verificationToken: code,
        tokenExpiry: Date.now() + CODE_TTL_MS,
      })
      .onConflictDoNothing({ target: users.email })
      .returning({ id: users.id });
    if (!created) return c.text(AuthMessage.userExists, 409);

    log.info("user_registered", { userId: created.id });
    await sendVerificationEmail(config.smtp, email, code, log);
    return c.text(AuthMessage.userCreated, 201);
  })
  .all("/register", methodNotAllowed("POST"))

  .post("/verify-email", async (c) => {
    const { email, token } = readVerification(await readJsonObject(c));
    const { db } = c.var;
    const now = Date.now();

    const user = await db
      .select({
        id: users.id,
        verificationToken: users.verificationToken,
        tokenExpiry: users.tokenExpiry,
        failedCodeAttempts: users.failedCodeAttempts,
      })
      .from(users)
      .where(eq(users.email, email))
      .get();
    const usable =
      user?.verificationToken != null &&
      user.tokenExpiry != null &&
      user.tokenExpiry > now &&
      user.failedCodeAttempts < MAX_CODE_ATTEMPTS;
    if (!user || !usable) return c.text(AuthMessage.invalidToken, 401);

    if (!codesMatch(token, user.verificationToken!)) {
      await db
        .update(users)
        .set({ failedCodeAttempts: sql`${users.failedCodeAttempts} + 1` })
        .where(eq(users.id, user.id));
      return c.text(AuthMessage.invalidToken, 401);
    }

    // The conditions are checked again in the write itself, so wrong guesses racing this request
    // cannot add up to more than MAX_CODE_ATTEMPTS tries at one code.
    const verified = await db
      .update(users)
      .set({ isVerified: true, verificationToken: null, tokenExpiry: null, failedCodeAttempts: 0 })
      .where(
        and(
          eq(users.id, user.id),
          eq(users.verificationToken, user.verificationToken!),
          gt(users.tokenExpiry, now),
          lt(users.failedCodeAttempts, MAX_CODE_ATTEMPTS),
        ),
      )
      .returning({ id: users.id });
    if (verified.length === 0) return c.text(AuthMessage.invalidToken, 401);
    return c.text(AuthMessage.emailVerified, 200);
  })
  .all("/verify-email", methodNotAllowed("POST"))

  .post("/login", async (c) => {
    const { email, password } = readCredentials(await readJsonObject(c));
    const { config, db } = c.var;

    const user = await db
      .select({ id: users.id, password: users.password, isVerified: users.isVerified })
      .from(users)
      .where(eq(users.email, email))
      .get();
    // The password is checked first: an unverified account with a wrong password is a 401, not a 403.
    if (!(await verifyPassword(password, user?.password, config.bcryptCost)) || !user) {
      return c.text(AuthMessage.invalidCredentials, 401);
    }
    if (!user.isVerified) return c.text(AuthMessage.notVerified, 403);
    if (!config.jwtSecret) throw new ConfigError("JWT_SECRET_KEY is not set; cannot sign login tokens");

    return c.json({ token: await signLoginToken(user.id, config.jwtSecret) }, 200);
  })
  .all("/login", methodNotAllowed("POST"));
