import { describe, expect, it } from "vitest";
import { call, mailedCode, randomEmail, register, textOf, TEXT } from "./helpers";

describe("smoke", () => {
  it("registers and mails", async () => {
    const email = randomEmail();
    expect(await textOf(await register(email))).toEqual({ status: 201, type: TEXT, body: "User created. Please check your email for a verification code." });
    const code = await mailedCode(email);
    expect(code).toMatch(/^\d{6}$/);
    const r = await call("GET", "/notes");
    expect(r.status).toBe(200);
  });
});
