import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { Contract } from "../../contract";
import {
  account,
  bearer,
  confirmEmailChange,
  emailChangeCode,
  expectEnded,
  postLogin,
  logIn,
  NEW_PASSWORD,
  pastCooldown,
  register,
  reset,
  resetCode,
  revertTokenMailed,
  storedUser,
} from "../../support/accounts";
import { call, callWithEnv, count, PASSWORD, randomEmail, tally, TEXT, textOf } from "../../support/app";
import { mailsWithSubject } from "../../support/mail";

/**
 * Undoing an e-mail change with the revert token of the notice mailed to the old address
 * (src/auth/account/email-revert.ts): the answer to a phished password that a change confirmed by the new
 * mailbox alone would otherwise make permanent.
 */

function revert(token: unknown): Promise<Response> {
  return call("POST", "/auth/revert-email-change", { token });
}

/** An account whose address someone who knows its password has changed to one of theirs. */
async function hijacked(): Promise<{
  owner: string;
  thief: string;
  thiefTokens: Awaited<ReturnType<typeof logIn>>;
  revertToken: string;
}> {
  const owner = await account();
  const thief = randomEmail("thief");
  const thiefTokens = await logIn(owner);
  const code = await emailChangeCode(owner, thiefTokens.token, thief);
  expect((await confirmEmailChange(thiefTokens.token, code)).status).toBe(200);
  return { owner, thief, thiefTokens, revertToken: await revertTokenMailed(owner) };
}

describe("POST /auth/revert-email-change", () => {
  it("gives the old address back, ends every session and clears the phished password; the owner resets and logs in", async () => {
    const { owner, thief, thiefTokens, revertToken } = await hijacked();
    const thiefSecondSession = await logIn(thief);

    expect(await textOf(await revert(revertToken))).toEqual({
      status: 200,
      type: TEXT,
      body: AuthMessage.emailChangeReverted,
    });

    expect((await storedUser(owner))?.email).toBe(owner);
    expect(await storedUser(thief)).toBeNull();
    await expectEnded(thiefTokens);
    await expectEnded(thiefSecondSession);
    // The password the thief knows opens nothing, under either address.
    expect(await textOf(await postLogin(owner, PASSWORD))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
    expect(await textOf(await postLogin(thief, PASSWORD))).toEqual({
      status: 401,
      type: TEXT,
      body: Contract.invalidCredentials,
    });
    // The owner sets a new password through the mailbox they got back.
    expect((await reset(owner, await resetCode(owner))).status).toBe(200);
    expect((await postLogin(owner, NEW_PASSWORD)).status).toBe(200);
  });

  it("is used up by the revert: the same token again is refused", async () => {
    const { revertToken } = await hijacked();
    expect((await revert(revertToken)).status).toBe(200);
    expect(await textOf(await revert(revertToken))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidRevertToken,
    });
  });

  it("reverts exactly once when 20 requests with one token arrive together", async () => {
    const { owner, revertToken } = await hijacked();
    const responses = await Promise.all(Array.from({ length: 20 }, () => revert(revertToken)));
    expect(tally(responses)).toEqual({ 200: 1, 401: 19 });
    expect((await storedUser(owner))?.email).toBe(owner);
  });

  it("refuses an unknown token and one past its 7 days", async () => {
    expect(await textOf(await revert("q3Jx8v0bYV3oQ1m2k5nR7w"))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidRevertToken,
    });
    const { owner, thief, revertToken } = await hijacked();
    await env.DB.prepare(
      "UPDATE email_change_reverts SET expires_at = ? WHERE user_id = (SELECT id FROM users WHERE email = ?)",
    )
      .bind(Date.now() - 1, thief)
      .run();
    expect(await textOf(await revert(revertToken))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidRevertToken,
    });
    expect(await storedUser(owner)).toBeNull();
  });

  it("keeps the old address reserved while its token lives: registering it, or another account's change to it, is a 409 (F7)", async () => {
    const { owner, revertToken } = await hijacked();
    expect(await textOf(await register(owner, "someone else's password"))).toEqual({
      status: 409,
      type: TEXT,
      body: Contract.userExists,
    });
    const other = await account();
    const { token } = await logIn(other);
    await pastCooldown(other);
    expect(
      await textOf(await call("POST", "/auth/change-email", { password: PASSWORD, new_email: owner }, bearer(token))),
    ).toEqual({
      status: 409,
      type: TEXT,
      body: Contract.userExists,
    });
    expect((await revert(revertToken)).status).toBe(200);
    expect((await storedUser(owner))?.email).toBe(owner);
  });

  it("frees the old address once the token has expired", async () => {
    const { owner } = await hijacked();
    await env.DB.prepare("UPDATE email_change_reverts SET expires_at = ? WHERE old_email = ?")
      .bind(Date.now() - 1, owner)
      .run();
    expect((await register(owner, "someone else's password")).status).toBe(201);
  });

  it("answers 409 while another account holds the old address after all, and keeps the token for when it is free again", async () => {
    const { owner, thief, revertToken } = await hijacked();
    // Only a row from before reservations existed can hold it: written directly.
    await env.DB.prepare("INSERT INTO users (email, password, isVerified, createdAt) VALUES (?, 'x', 1, ?)")
      .bind(owner, Date.now())
      .run();
    expect(await textOf(await revert(revertToken))).toEqual({
      status: 409,
      type: TEXT,
      body: AuthMessage.revertAddressTaken,
    });
    expect((await storedUser(thief))?.email).toBe(thief);

    await env.DB.prepare("DELETE FROM users WHERE email = ?").bind(owner).run();
    expect((await revert(revertToken)).status).toBe(200);
    expect((await storedUser(owner))?.email).toBe(owner);
  });

  it("keeps the owner's token good after a thief's later revert: A to B to C, the thief undoes C with B's token, the owner then undoes B with A's (F3)", async () => {
    const { owner, thief, thiefTokens, revertToken } = await hijacked();
    const further = randomEmail("further");
    const code = await emailChangeCode(thief, thiefTokens.token, further);
    expect((await confirmEmailChange(thiefTokens.token, code)).status).toBe(200);
    const thiefsToken = await revertTokenMailed(thief);

    expect((await revert(thiefsToken)).status).toBe(200);
    expect((await storedUser(thief))?.email).toBe(thief);
    expect(await textOf(await revert(revertToken))).toEqual({
      status: 200,
      type: TEXT,
      body: AuthMessage.emailChangeReverted,
    });
    expect((await storedUser(owner))?.email).toBe(owner);
    // The thief cannot reset through their address: it is not the account's any more.
    expect(await storedUser(thief)).toBeNull();
  });

  it("removes a second factor the thief added after the change; one from before stays (F8)", async () => {
    const { owner, thief, thiefTokens, revertToken } = await hijacked();
    const userId = (await storedUser(thief))!.id;
    const enrolled = await call("POST", "/auth/mfa/totp", { password: PASSWORD }, bearer(thiefTokens.token));
    expect(enrolled.status).toBe(200);
    // Confirmed as the thief's app would (the step claimed far ahead, so no real code is needed here).
    await env.DB.prepare("UPDATE mfa_factors SET status = 'active', last_used_step = 1 WHERE user_id = ?")
      .bind(userId)
      .run();
    await env.DB.prepare("INSERT INTO mfa_recovery_codes (user_id, code_hash) VALUES (?, 'h')").bind(userId).run();

    expect((await revert(revertToken)).status).toBe(200);
    expect(await count("SELECT count(*) AS n FROM mfa_factors WHERE user_id = ?", userId)).toBe(0);
    expect(await count("SELECT count(*) AS n FROM mfa_recovery_codes WHERE user_id = ?", userId)).toBe(0);
    // The owner resets through the mailbox they got back, and signs in with no code asked.
    expect((await reset(owner, await resetCode(owner))).status).toBe(200);
    const answer = (await (await postLogin(owner, NEW_PASSWORD)).json()) as Record<string, unknown>;
    expect(answer).toHaveProperty("token");
    expect(answer).not.toHaveProperty("mfa_required");
  });

  it("links the notice to the API's own undo page, which changes nothing when opened and undoes the change with its button", async () => {
    const { owner, revertToken } = await hijacked();
    const [notice] = await mailsWithSubject(owner, "Your Email Address Was Changed");
    const link = new URL(/undo the change within 7 days: (\S+)$/m.exec(notice!.text)![1]!);
    expect(link.searchParams.get("token")).toBe(revertToken);
    const page = await call("GET", `${link.pathname}${link.search}`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=UTF-8");
    expect(page.headers.get("content-security-policy")).toMatch(
      /^default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+'; style-src 'sha256-[A-Za-z0-9+/=]+'; connect-src 'self'/,
    );
    expect(page.headers.get("referrer-policy")).toBe("no-referrer");
    expect(await page.text()).toContain('fetch("revert-email-change", { method: "POST"');
    // Opening it (as a mail scanner would) changed nothing.
    expect(await count("SELECT count(*) AS n FROM email_change_reverts WHERE old_email = ?", owner)).toBe(1);
    expect((await revert(revertToken)).status).toBe(200);
  });

  it("links the notice to APP_URL's page when it is set, and keeps the token for apps", async () => {
    const owner = await account();
    const { token } = await logIn(owner);
    const code = await emailChangeCode(owner, token, randomEmail("new"));
    expect(
      (
        await callWithEnv(
          { APP_URL: "https://app.example.com" },
          "POST",
          "/auth/confirm-email-change",
          { token: code },
          bearer(token),
        )
      ).status,
    ).toBe(200);
    const [notice] = await mailsWithSubject(owner, "Your Email Address Was Changed");
    const revertToken = await revertTokenMailed(owner);
    expect(notice!.text).toContain(
      `undo the change within 7 days: https://app.example.com/revert-email-change?token=${revertToken}`,
    );
  });

  it("mails the address it takes the account from (F9)", async () => {
    const { owner, thief, revertToken } = await hijacked();
    expect((await revert(revertToken)).status).toBe(200);
    const [notice] = await mailsWithSubject(thief, "Your Email Address Was Changed Back");
    expect(notice?.text).toContain("no longer signs in");
    expect(notice?.text).toContain(owner.slice(-12));
  });

  it("undoes a chain of changes back to the first address, and voids the later notices' tokens", async () => {
    const { owner, thief, thiefTokens, revertToken } = await hijacked();
    const further = randomEmail("further");
    const code = await emailChangeCode(thief, thiefTokens.token, further);
    expect((await confirmEmailChange(thiefTokens.token, code)).status).toBe(200);
    const thiefsToken = await revertTokenMailed(thief);

    expect((await revert(revertToken)).status).toBe(200);
    expect((await storedUser(owner))?.email).toBe(owner);
    expect(await textOf(await revert(thiefsToken))).toEqual({
      status: 401,
      type: TEXT,
      body: AuthMessage.invalidRevertToken,
    });
  });

  it.each([
    [{}, AuthMessage.tokenRequired],
    [{ token: 42 }, AuthMessage.tokenString],
  ])("answers 400 for %j", async (body, message) => {
    expect(await textOf(await call("POST", "/auth/revert-email-change", body))).toEqual({
      status: 400,
      type: TEXT,
      body: message,
    });
  });
});
