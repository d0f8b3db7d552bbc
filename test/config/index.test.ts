import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

/** The settings the tests run with: wrangler.toml's and the suite's own, never a developer's local ones. */

describe("the settings every test sees", () => {
  it("are wrangler.toml's [vars] for every var the suite does not set itself, whatever a local .dev.vars holds", () => {
    const { defaults, own } = env.TEST_VARS;
    expect(Object.keys(defaults)).toEqual(expect.arrayContaining(["NOTES_AUTH", "SMTP_HOST", "RATE_LIMITS"]));
    const seen = Object.fromEntries(
      Object.keys(defaults)
        .filter((name) => !own.includes(name))
        .map((name) => [name, Reflect.get(env, name)]),
    );
    const expected = Object.fromEntries(Object.entries(defaults).filter(([name]) => !own.includes(name)));
    expect(seen).toEqual(expected);
  });

  it("send mail to the loopback mailbox with the suite's own account, not a local one", () => {
    expect({ host: env.SMTP_HOST, port: env.SMTP_PORT, from: env.MAIL_EMAIL }).toEqual({
      host: "127.0.0.1",
      port: String(env.SMTP.ports.mailbox),
      from: "sender@notes.test",
    });
  });
});
