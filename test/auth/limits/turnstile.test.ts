import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AuthMessage } from "../../../src/auth/messages";
import { Contract } from "../../contract";
import { TURNSTILE_TEST_SECRET } from "../../smtp/types";
import { storedUser } from "../../support/accounts";
import { callWithEnv, PASSWORD, randomEmail, TEXT, textOf } from "../../support/app";

/**
 * Cloudflare Turnstile on register, resend-verification and forgot-password (src/auth/limits/turnstile.ts),
 * against a siteverify of the tests' own on loopback (test/smtp/servers.ts): the token "pass" passes.
 */

const withTurnstile = {
  TURNSTILE_SECRET_KEY: TURNSTILE_TEST_SECRET,
  TURNSTILE_VERIFY_URL: `${env.SMTP.inspectUrl}/turnstile/siteverify`,
};

async function formsSent(): Promise<Record<string, string>[]> {
  return (await fetch(`${env.SMTP.inspectUrl}/turnstile/forms`)).json();
}

describe("Turnstile (TURNSTILE_SECRET_KEY)", () => {
  it("asks nothing while the secret is unset: the contract's register answers as always", async () => {
    const email = randomEmail();
    expect(await textOf(await callWithEnv({}, "POST", "/auth/register", { email, password: PASSWORD }))).toEqual({
      status: 201,
      type: TEXT,
      body: Contract.userCreated,
    });
  });

  /** What each endpoint answers once the token passed: its usual answer. */
  const passed = async (response: Response) => ({ status: response.status, body: await response.text() });
  const forgotAnswer = (body: string) => JSON.parse(body) as { message: string };
  it.each([
    [
      "register",
      "/auth/register",
      (email: string) => ({ email, password: PASSWORD }),
      { status: 201, body: Contract.userCreated },
    ],
    [
      "resend-verification",
      "/auth/resend-verification",
      (email: string) => ({ email }),
      { status: 200, body: AuthMessage.resendAccepted },
    ],
    [
      "forgot-password",
      "/auth/forgot-password",
      (email: string) => ({ email }),
      { status: 200, message: AuthMessage.resetRequested },
    ],
  ])(
    "%s: no token is a 400, a refused one a 403; a passing one gets the usual answer, from the body field or the header",
    async (_name, path, bodyOf, usual) => {
      const expectUsual = async (response: Response) => {
        const answer = await passed(response);
        if ("message" in usual)
          expect({ status: answer.status, message: forgotAnswer(answer.body).message }).toEqual(usual);
        else expect(answer).toEqual(usual);
      };
      const email = randomEmail("turnstile");
      expect(await textOf(await callWithEnv(withTurnstile, "POST", path, bodyOf(email)))).toEqual({
        status: 400,
        type: TEXT,
        body: AuthMessage.turnstileRequired,
      });
      expect(
        await textOf(
          await callWithEnv(withTurnstile, "POST", path, { ...bodyOf(email), "cf-turnstile-response": "fail" }),
        ),
      ).toEqual({
        status: 403,
        type: TEXT,
        body: AuthMessage.turnstileFailed,
      });
      await expectUsual(
        await callWithEnv(
          withTurnstile,
          "POST",
          path,
          { ...bodyOf(email), "cf-turnstile-response": "pass" },
          { "CF-Connecting-IP": "203.0.113.9" },
        ),
      );
      expect((await formsSent()).at(-1)).toEqual({
        secret: TURNSTILE_TEST_SECRET,
        response: "pass",
        remoteip: "203.0.113.9",
      });
      await expectUsual(
        await callWithEnv(withTurnstile, "POST", path, bodyOf(randomEmail("header")), {
          "cf-turnstile-response": "pass",
        }),
      );
    },
  );

  it("creates no account for a refused token", async () => {
    const email = randomEmail("refused");
    expect(
      (
        await callWithEnv(withTurnstile, "POST", "/auth/register", {
          email,
          password: PASSWORD,
          "cf-turnstile-response": "fail",
        })
      ).status,
    ).toBe(403);
    expect(await storedUser(email)).toBeNull();
  });

  it("refuses, as a 503, while siteverify cannot be reached: it fails closed", async () => {
    const unreachable = {
      ...withTurnstile,
      TURNSTILE_VERIFY_URL: `http://127.0.0.1:${env.SMTP.ports.refused}/siteverify`,
    };
    expect(
      await textOf(
        await callWithEnv(unreachable, "POST", "/auth/register", {
          email: randomEmail(),
          password: PASSWORD,
          "cf-turnstile-response": "pass",
        }),
      ),
    ).toEqual({
      status: 503,
      type: TEXT,
      body: AuthMessage.turnstileUnavailable,
    });
  });
});
