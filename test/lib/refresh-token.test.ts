import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readRefreshToken, refreshTokenFor } from "../../src/lib/refresh-token";

const SID = "AAAAAAAAAAAAAAAAAAAAAA";

describe("refresh tokens", () => {
  const secret = env.JWT_SECRET_KEY!;

  it("names the session and generation they were made for, and only under the same secret", async () => {
    const token = await refreshTokenFor({ sessionId: SID, generation: 7 }, secret);
    expect(token).toMatch(/^A{22}\.7\.[A-Za-z0-9_-]{43}$/);
    expect(await readRefreshToken(token, secret)).toEqual({ sessionId: SID, generation: 7 });
    expect(await readRefreshToken(token, `${secret}-other`)).toBeUndefined();
  });

  it("refuses a token whose generation or session was changed", async () => {
    const token = await refreshTokenFor({ sessionId: SID, generation: 7 }, secret);
    expect(await readRefreshToken(token.replace(".7.", ".8."), secret)).toBeUndefined();
    expect(await readRefreshToken(`B${token.slice(1)}`, secret)).toBeUndefined();
    expect(await readRefreshToken(token.replace(".7.", ".07."), secret)).toBeUndefined();
  });
});
