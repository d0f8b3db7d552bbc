import { describe, expect, it } from "vitest";
import { AttachmentMessage } from "../../../src/notes/attachments/messages";
import { NoteMessage } from "../../../src/notes/messages";
import { jsonOf } from "../../support/app";
import { error } from "../../support/notes";
import { newNote, owner, patternBytes, PNG, randomBytes, send, sha256Of, text, uploaded } from "./support";

/** GET /notes/{id}/attachments and GET /notes/{id}/attachments/{attachmentId} (src/notes/attachments/serve.ts). */

const MiB = 1024 * 1024;
const SANDBOX = "sandbox; default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'";

async function download(token: string, noteId: number, id: string, headers: Record<string, string> = {}) {
  return send("GET", `/notes/${noteId}/attachments/${id}`, { token, headers });
}

const bytesOf = async (response: Response) => new Uint8Array(await response.arrayBuffer());

describe("GET /notes/{id}/attachments", () => {
  it("lists the note's attachments oldest first, each as uploaded with a fresh url", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const first = await uploaded(token, noteId, PNG, "a.png");
    const second = await uploaded(token, noteId, text("notes"), "b.txt");
    const response = await send("GET", `/notes/${noteId}/attachments`, { token });
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const { url: _first, ...firstFields } = first;
    const { url: _second, ...secondFields } = second;
    expect(await response.json()).toEqual([
      { ...firstFields, url: expect.stringMatching(`/attachments/${first.id}\\?expires=\\d+&signature=[0-9a-f]{64}$`) },
      { ...secondFields, url: expect.stringMatching(`/attachments/${second.id}\\?expires=`) },
    ]);
  });

  it("answers [] for a note without attachments, and 404 for a note that does not exist", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    expect(await jsonOf(await send("GET", `/notes/${noteId}/attachments`, { token }))).toMatchObject({
      status: 200,
      body: [],
    });
    expect(await jsonOf(await send("GET", `/notes/${noteId + 1_000_000}/attachments`, { token }))).toEqual(
      error(404, NoteMessage.notFound),
    );
  });
});

describe("GET /notes/{id}/attachments/{attachmentId}", () => {
  it("answers the exact bytes with their type, length, ETag, nosniff, a sandbox policy and private caching", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const png = await uploaded(token, noteId, PNG, "dot.png");
    const response = await download(token, noteId, png.id);
    expect(response.status).toBe(200);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      "content-type": "image/png",
      "content-length": String(PNG.byteLength),
      etag: `"${await sha256Of(PNG)}"`,
      "x-content-type-options": "nosniff",
      "content-security-policy": SANDBOX,
      "cache-control": "private",
      "content-disposition": "inline; filename*=UTF-8''dot.png",
      "accept-ranges": "bytes",
      "cross-origin-resource-policy": "same-origin",
    });
    expect(await bytesOf(response)).toEqual(PNG);
  });

  it("gives 10 MiB back byte for byte: the download's SHA-256 is the upload's", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const big = randomBytes(10 * MiB);
    const stored = await uploaded(token, noteId, big, "big.bin");
    expect(stored.sha256).toBe(await sha256Of(big));
    const response = await download(token, noteId, stored.id);
    expect(response.headers.get("content-length")).toBe(String(10 * MiB));
    expect(await sha256Of(await bytesOf(response))).toBe(stored.sha256);
  });

  it("serves an HTML file as a download of unknown type, with nosniff and the sandbox", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const html = text("<html><body><script>fetch('/auth/me')</script></body></html>");
    const stored = await uploaded(token, noteId, html, "page.html");
    expect(stored.content_type).toBe("application/octet-stream");
    const response = await download(token, noteId, stored.id);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      "content-type": "application/octet-stream",
      "content-disposition": "attachment; filename*=UTF-8''page.html",
      "x-content-type-options": "nosniff",
      "content-security-policy": SANDBOX,
    });
    expect(await bytesOf(response)).toEqual(html);
  });

  it("names text and other files as downloads, their names in RFC 8187's encoding", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const stored = await uploaded(token, noteId, text("hello"), "Grüße (final)'s.txt");
    const response = await download(token, noteId, stored.id);
    expect(response.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(response.headers.get("content-disposition")).toBe(
      "attachment; filename*=UTF-8''Gr%C3%BC%C3%9Fe%20%28final%29%27s.txt",
    );
  });

  it("answers 304 to If-None-Match with the ETag (or *), with no body", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const stored = await uploaded(token, noteId, PNG);
    for (const tag of [`"${stored.sha256}"`, `W/"${stored.sha256}"`, `"other", "${stored.sha256}"`, "*"]) {
      const response = await download(token, noteId, stored.id, { "If-None-Match": tag });
      expect(response.status).toBe(304);
      expect(response.headers.get("etag")).toBe(`"${stored.sha256}"`);
      expect(await response.text()).toBe("");
    }
    expect((await download(token, noteId, stored.id, { "If-None-Match": '"other"' })).status).toBe(200);
  });

  it("answers one range with 206 and Content-Range, and an unsatisfiable one with 416", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const bytes = patternBytes(1000);
    const stored = await uploaded(token, noteId, bytes);
    const ranged = async (range: string, from: number, to: number) => {
      const response = await download(token, noteId, stored.id, { Range: range });
      expect(response.status).toBe(206);
      expect(response.headers.get("content-range")).toBe(`bytes ${from}-${to}/1000`);
      expect(response.headers.get("content-length")).toBe(String(to - from + 1));
      expect(response.headers.get("etag")).toBe(`"${stored.sha256}"`);
      expect(await bytesOf(response)).toEqual(bytes.subarray(from, to + 1));
    };
    await ranged("bytes=0-99", 0, 99);
    await ranged("bytes=900-", 900, 999);
    await ranged("bytes=-10", 990, 999);
    await ranged("bytes=990-5000", 990, 999);
    await ranged("bytes=-5000", 0, 999);
    for (const range of ["bytes=1000-", "bytes=1000-1001", "bytes=-0"]) {
      const response = await download(token, noteId, stored.id, { Range: range });
      expect(await jsonOf(response)).toEqual(error(416, AttachmentMessage.rangeNotSatisfiable));
      expect(response.headers.get("content-range")).toBe("bytes */1000");
    }
  });

  it("answers the whole file to several ranges, a malformed one, or an If-Range of another copy", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const bytes = patternBytes(100);
    const stored = await uploaded(token, noteId, bytes);
    const wholeFile: Record<string, string>[] = [
      { Range: "bytes=0-1,5-6" },
      { Range: "bytes=5-1" },
      { Range: "items=0-1" },
      { Range: "bytes=0-1", "If-Range": '"another copy"' },
    ];
    for (const headers of wholeFile) {
      const response = await download(token, noteId, stored.id, headers);
      expect(response.status).toBe(200);
      expect(await bytesOf(response)).toEqual(bytes);
    }
    const matching = await download(token, noteId, stored.id, { Range: "bytes=0-1", "If-Range": `"${stored.sha256}"` });
    expect(matching.status).toBe(206);
    await matching.arrayBuffer();
  });

  it("answers 404 for an attachment of another note of the caller's, or an unknown one", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const otherNote = await newNote(token);
    const stored = await uploaded(token, noteId, PNG);
    expect(await jsonOf(await download(token, otherNote, stored.id))).toEqual(error(404, AttachmentMessage.notFound));
    expect(await jsonOf(await download(token, noteId, "AAAAAAAAAAAAAAAAAAAAAA"))).toEqual(
      error(404, AttachmentMessage.notFound),
    );
  });
});
