import { describe, expect, it } from "vitest";
import { AttachmentMessage } from "../../../src/notes/attachments/messages";
import { bearer } from "../../support/accounts";
import { call, jsonOf, PASSWORD } from "../../support/app";
import { error } from "../../support/notes";
import { linkPath, newNote, owner, patternBytes, PNG, send, sha256Of, uploaded } from "./support";

/** GET /attachments/{id}?expires=…&signature=… (src/notes/attachments/links.ts, link-routes.ts). */

/** A link's parts, to change one at a time. */
function partsOf(url: string) {
  const link = new URL(url);
  return {
    id: link.pathname.split("/").at(-1)!,
    expires: link.searchParams.get("expires")!,
    signature: link.searchParams.get("signature")!,
  };
}
const pathOf = ({ id, expires, signature }: ReturnType<typeof partsOf>) =>
  `/attachments/${id}?expires=${expires}&signature=${signature}`;

const open = (path: string, headers: Record<string, string> = {}) => send("GET", path, { headers });

describe("a signed link", () => {
  it("answers the bytes without any token, as the download does, and may be shown by another origin's page", async () => {
    const { token } = await owner();
    const stored = await uploaded(token, await newNote(token), PNG, "dot.png");
    const response = await open(linkPath(stored.url));
    expect(response.status).toBe(200);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      "content-type": "image/png",
      "content-length": String(PNG.byteLength),
      etag: `"${await sha256Of(PNG)}"`,
      "x-content-type-options": "nosniff",
      "content-security-policy": "sandbox; default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
      "cache-control": "private",
      "content-disposition": "inline; filename*=UTF-8''dot.png",
      "cross-origin-resource-policy": "cross-origin",
    });
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(PNG);
  });

  it("answers a range (206), an unsatisfiable one (416) and a matching If-None-Match (304)", async () => {
    const { token } = await owner();
    const bytes = patternBytes(100);
    const stored = await uploaded(token, await newNote(token), bytes);
    const part = await open(linkPath(stored.url), { Range: "bytes=10-19" });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe("bytes 10-19/100");
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.subarray(10, 20));
    expect((await open(linkPath(stored.url), { Range: "bytes=100-" })).status).toBe(416);
    const cached = await open(linkPath(stored.url), { "If-None-Match": `"${stored.sha256}"` });
    expect(cached.status).toBe(304);
  });

  it("answers 403 when the id, expires or signature was changed, or one is missing", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const stored = await uploaded(token, noteId, PNG);
    const other = await uploaded(token, noteId, PNG);
    const link = partsOf(stored.url);
    const flipped = (link.signature[0] === "0" ? "1" : "0") + link.signature.slice(1);
    for (const path of [
      pathOf({ ...link, id: partsOf(other.url).id }),
      pathOf({ ...link, expires: String(Number(link.expires) + 1) }),
      pathOf({ ...link, expires: String(Number(link.expires) - 1) }),
      pathOf({ ...link, signature: flipped }),
      pathOf({ ...link, signature: link.signature.toUpperCase() }),
      pathOf({ ...link, signature: partsOf(other.url).signature }),
      `/attachments/${link.id}?expires=${link.expires}`,
      `/attachments/${link.id}?signature=${link.signature}`,
      `/attachments/${link.id}`,
    ]) {
      expect(await jsonOf(await open(path)), path).toEqual(error(403, AttachmentMessage.invalidLink));
    }
    expect((await open(pathOf(link))).status).toBe(200);
  });

  it("answers 403 once expired: ATTACHMENT_URL_TTL_SECONDS=1, then a wait", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    await uploaded(token, noteId, PNG);
    const ttl = { ATTACHMENT_URL_TTL_SECONDS: "1" };
    const listed = await send("GET", `/notes/${noteId}/attachments`, { token, env: ttl });
    const [{ url }] = (await listed.json()) as [{ url: string }];
    const expires = Number(partsOf(url).expires);
    expect(expires * 1000 - Date.now()).toBeGreaterThanOrEqual(1000 - 50);
    expect(expires * 1000 - Date.now()).toBeLessThanOrEqual(2000);
    expect((await open(linkPath(url))).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, expires * 1000 - Date.now() + 50));
    expect(await jsonOf(await open(linkPath(url)))).toEqual(error(403, AttachmentMessage.expiredLink));
  });

  it("answers 403 to a link signed under another JWT_SECRET_KEY (after a rotation)", async () => {
    const { token } = await owner();
    const stored = await uploaded(token, await newNote(token), PNG);
    const rotated = { JWT_SECRET_KEY: "another-secret-0123456789abcdef0123456789" };
    expect(await jsonOf(await send("GET", linkPath(stored.url), { env: rotated }))).toEqual(
      error(403, AttachmentMessage.invalidLink),
    );
  });

  it("answers 404 with a valid signature once the attachment is deleted", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const stored = await uploaded(token, noteId, PNG);
    expect((await send("DELETE", `/notes/${noteId}/attachments/${stored.id}`, { token })).status).toBe(204);
    expect(await jsonOf(await open(linkPath(stored.url)))).toEqual(error(404, AttachmentMessage.notFound));
  });

  it("answers 404 with a valid signature once the note is deleted", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const stored = await uploaded(token, noteId, PNG);
    expect((await send("DELETE", `/notes/${noteId}`, { token })).status).toBe(204);
    expect(await jsonOf(await open(linkPath(stored.url)))).toEqual(error(404, AttachmentMessage.notFound));
  });

  it("answers 404 with a valid signature once the account is deleted", async () => {
    const { token } = await owner();
    const stored = await uploaded(token, await newNote(token), PNG);
    expect((await call("DELETE", "/auth/account", { password: PASSWORD }, bearer(token))).status).toBe(204);
    expect(await jsonOf(await open(linkPath(stored.url)))).toEqual(error(404, AttachmentMessage.notFound));
  });

  it("answers 404 saying attachments need accounts when notes are public, however valid", async () => {
    const { token } = await owner();
    const stored = await uploaded(token, await newNote(token), PNG);
    expect(await jsonOf(await call("GET", linkPath(stored.url)))).toEqual(error(404, AttachmentMessage.needsAccounts));
  });
});
