import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AttachmentMessage } from "../../../src/notes/attachments/messages";
import { NoteMessage } from "../../../src/notes/messages";
import { bearer } from "../../support/accounts";
import { JSON_TYPE, jsonOf } from "../../support/app";
import { error } from "../../support/notes";
import {
  chunkedBody,
  newNote,
  objectBytes,
  owner,
  patternBytes,
  PNG,
  rowsOfNote,
  sendRequest,
  sha256Of,
  storedRow,
  text,
  upload,
  uploaded,
  watchedBucket,
} from "./support";

/** POST /notes/{id}/attachments (src/notes/attachments/routes.ts, upload.ts, sniff.ts). */

const KiB = 1024;
const MiB = 1024 * KiB;

/** An upload built by the test: a streamed body, with or without a Content-Length. */
function streamedUpload(token: string, noteId: number, body: ReadableStream<Uint8Array>, length?: number) {
  const headers: Record<string, string> = { ...bearer(token) };
  if (length !== undefined) headers["Content-Length"] = String(length);
  return new Request(`http://api.test/notes/${noteId}/attachments`, { method: "POST", body, headers });
}

describe("POST /notes/{id}/attachments", () => {
  it("stores the bytes in R2 and answers 201 with the attachment and its Location", async () => {
    const { token, userId } = await owner();
    const noteId = await newNote(token);
    const before = Date.now();
    const response = await upload(token, noteId, PNG, { filename: "dot.png" });
    const body = (await response.json()) as Record<string, unknown>;
    expect(response.status).toBe(201);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(body).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      note_id: noteId,
      filename: "dot.png",
      content_type: "image/png",
      size: PNG.byteLength,
      sha256: await sha256Of(PNG),
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      url: expect.stringMatching(
        /^http:\/\/api\.test\/attachments\/[A-Za-z0-9_-]{22}\?expires=\d+&signature=[0-9a-f]{64}$/,
      ),
    });
    const id = String(body.id);
    expect(Date.parse(String(body.created_at))).toBeGreaterThanOrEqual(before);
    expect(response.headers.get("location")).toBe(`/notes/${noteId}/attachments/${id}`);
    expect(await objectBytes(id)).toEqual(PNG);
    expect(await storedRow(id)).toEqual({
      id,
      note_id: noteId,
      user_id: userId,
      filename: "dot.png",
      size: PNG.byteLength,
      content_type: "image/png",
      sha256: await sha256Of(PNG),
      created_at: Date.parse(String(body.created_at)),
      stored_at: expect.any(Number),
    });
  });

  it('names a file "file" without a filename, and strips path separators and control characters from one', async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    expect((await uploaded(token, noteId, text("a"))).filename).toBe("file");
    expect((await uploaded(token, noteId, text("a"), "../../etc/pass\u0000wd\r\n.txt")).filename).toBe(
      "....etcpasswd.txt",
    );
    expect((await uploaded(token, noteId, text("a"), "C:\\Users\\ada\\photo.png")).filename).toBe(
      "C:Usersadaphoto.png",
    );
    // A right-to-left override would show "evil\u202Egnp.exe" as "evilexe.png".
    expect((await uploaded(token, noteId, text("a"), "evil\u202Egnp.exe")).filename).toBe("evilgnp.exe");
    expect((await uploaded(token, noteId, text("a"), "Übersicht 📎.pdf")).filename).toBe("Übersicht 📎.pdf");
    expect((await uploaded(token, noteId, text("a"), "//..")).filename).toBe("file");
  });

  it("takes a filename of 255 characters and answers 400 for 256, storing nothing", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    expect((await uploaded(token, noteId, text("a"), "📎".repeat(255))).filename).toBe("📎".repeat(255));
    expect(await jsonOf(await upload(token, noteId, text("a"), { filename: "x".repeat(256) }))).toEqual(
      error(400, AttachmentMessage.filenameTooLong),
    );
    expect(await rowsOfNote(noteId)).toBe(1);
  });

  it("answers 411 to a body without Content-Length, without reading it", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const { body, read } = chunkedBody([text("hello")]);
    expect(await jsonOf(await sendRequest(streamedUpload(token, noteId, body)))).toEqual(
      error(411, AttachmentMessage.lengthRequired),
    );
    expect(read()).toBe(false);
    expect(await rowsOfNote(noteId)).toBe(0);
  });

  it("answers 413 for a Content-Length over ATTACHMENT_MAX_BYTES before reading or storing a byte", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const { bucket, puts } = watchedBucket();
    const { body, read } = chunkedBody([patternBytes(11)]);
    const limited = { ATTACHMENT_MAX_BYTES: "10", ATTACHMENTS: bucket };
    expect(await jsonOf(await sendRequest(streamedUpload(token, noteId, body, 11), limited))).toEqual(
      error(413, AttachmentMessage.tooLarge),
    );
    expect(read()).toBe(false);
    expect(puts).toEqual([]);
    expect(await rowsOfNote(noteId)).toBe(0);
    // Exactly the limit is fine.
    expect((await upload(token, noteId, patternBytes(10), { env: limited })).status).toBe(201);
  });

  for (const [what, declared, sent] of [
    ["shorter", 100, 99],
    ["longer", 100, 101],
  ] as const) {
    it(`answers 400 for a body ${what} than its Content-Length, and stores nothing`, async () => {
      const { token } = await owner();
      const noteId = await newNote(token);
      const { bucket, puts } = watchedBucket();
      // Sent in pieces, so that the extra or missing byte is found mid-stream, not from a known length.
      const bytes = patternBytes(sent);
      const { body } = chunkedBody([bytes.subarray(0, 40), bytes.subarray(40, 80), bytes.subarray(80)]);
      const response = await sendRequest(streamedUpload(token, noteId, body, declared), { ATTACHMENTS: bucket });
      expect(await jsonOf(response)).toEqual(error(400, AttachmentMessage.lengthMismatch));
      expect(puts).toHaveLength(1);
      expect(await env.ATTACHMENTS.head(puts[0]!)).toBeNull();
      expect(await storedRow(puts[0]!)).toBeNull();
      expect(await rowsOfNote(noteId)).toBe(0);
    });
  }

  it("answers 400 for a Content-Length that is not a number of bytes", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const response = await upload(token, noteId, text("abc"), { headers: { "Content-Length": "3.0" } });
    expect(await jsonOf(response)).toEqual(error(400, AttachmentMessage.invalidLength));
  });

  it("stores an empty file", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const empty = await uploaded(token, noteId, new Uint8Array(0));
    expect(empty).toMatchObject({
      size: 0,
      content_type: "text/plain; charset=utf-8",
      sha256: await sha256Of(new Uint8Array(0)),
    });
    expect(await objectBytes(empty.id)).toEqual(new Uint8Array(0));
  });

  it("answers 409 for the 101st attachment of a note, and stores nothing", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    for (let batch = 0; batch < 10; batch++) {
      const answers = await Promise.all(Array.from({ length: 10 }, () => upload(token, noteId, text("x"))));
      expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(201));
    }
    const { bucket, puts } = watchedBucket();
    const refused = await upload(token, noteId, text("one too many"), { env: { ATTACHMENTS: bucket } });
    expect(await jsonOf(refused)).toEqual(error(409, AttachmentMessage.tooMany));
    expect(puts).toEqual([]);
    expect(await rowsOfNote(noteId)).toBe(100);
    // Another note of the same account has room.
    expect((await upload(token, await newNote(token), text("x"))).status).toBe(201);
  });

  it("answers 404 for an unknown note and 400 for a note id that is not an integer", async () => {
    const { token } = await owner();
    expect(await jsonOf(await upload(token, 9_007_199_254_740_991, text("x")))).toEqual(
      error(404, NoteMessage.notFound),
    );
    const response = await sendRequest(
      new Request("http://api.test/notes/abc/attachments", {
        method: "POST",
        body: "x",
        headers: { ...bearer(token), "Content-Length": "1" },
      }),
    );
    expect(await jsonOf(response)).toEqual(error(400, NoteMessage.invalidId));
  });
});

describe("the quota (ATTACHMENT_QUOTA_BYTES)", () => {
  const QUOTA = { ATTACHMENT_QUOTA_BYTES: String(3 * MiB) };
  const file = (seed: number) => patternBytes(900 * KiB, seed);

  it("takes uploads one at a time until the next would pass it: 413 with its own message; a delete makes room at once", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await upload(token, noteId, file(i), { env: QUOTA });
      expect(response.status).toBe(201);
      ids.push(((await response.json()) as { id: string }).id);
    }
    const refused = await upload(token, noteId, file(3), { env: QUOTA });
    expect(await jsonOf(refused)).toEqual(error(413, AttachmentMessage.quotaFull));
    expect(AttachmentMessage.quotaFull).not.toBe(AttachmentMessage.tooLarge);
    // What is left (3 MiB - 2700 KiB = 372 KiB) still fits, to the byte.
    const rest = await upload(token, noteId, patternBytes(3 * MiB - 2700 * KiB), { env: QUOTA });
    expect(rest.status).toBe(201);
    expect(await jsonOf(await upload(token, noteId, text("1"), { env: QUOTA }))).toEqual(
      error(413, AttachmentMessage.quotaFull),
    );
    const deleted = await sendDelete(token, noteId, ids[0]!);
    expect(deleted.status).toBe(204);
    expect((await upload(token, noteId, file(4), { env: QUOTA })).status).toBe(201);
  });

  it("holds under a burst: 8 uploads of 900 KiB at once against 3 MiB store at most 3, the rest 413", async () => {
    const { token, userId } = await owner();
    const noteId = await newNote(token);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => upload(token, noteId, file(i), { env: QUOTA })),
    );
    const statuses = answers.map((answer) => answer.status);
    const stored = statuses.filter((status) => status === 201).length;
    expect(stored).toBeGreaterThanOrEqual(1);
    expect(stored).toBeLessThanOrEqual(3);
    expect(statuses.filter((status) => status === 413)).toHaveLength(8 - stored);
    for (const answer of answers.filter((a) => a.status === 413))
      expect(await answer.json()).toEqual({ error: AttachmentMessage.quotaFull });
    const listed = (await (await sendList(token, noteId)).json()) as Array<{ size: number }>;
    expect(listed).toHaveLength(stored);
    expect(listed.reduce((sum, a) => sum + a.size, 0)).toBeLessThanOrEqual(3 * MiB);
    const rows = await env.DB.prepare(
      "SELECT count(*) AS n, coalesce(sum(size), 0) AS bytes FROM attachments WHERE user_id = ?",
    )
      .bind(userId)
      .first<{ n: number; bytes: number }>();
    expect(rows).toEqual({ n: stored, bytes: stored * 900 * KiB });
  });
});

describe("content_type, decided from the bytes", () => {
  const cases: Array<[string, Uint8Array, string]> = [
    ["PNG", PNG, "image/png"],
    ["JPEG", Uint8Array.of(0xff, 0xd8, 0xff, 0xe0, 0, 0x10, ...text("JFIF")), "image/jpeg"],
    ["GIF", text("GIF89a\u0001\u0000\u0001\u0000"), "image/gif"],
    ["WebP", Uint8Array.of(...text("RIFF"), 0x24, 0, 0, 0, ...text("WEBPVP8 ")), "image/webp"],
    ["PDF", text("%PDF-1.7\n%\u00e2\u00e3\n1 0 obj"), "application/pdf"],
    ["UTF-8 text", text("Grüße, 你好 👋\nsecond line"), "text/plain; charset=utf-8"],
    ["text with a byte order mark", Uint8Array.of(0xef, 0xbb, 0xbf, ...text("hello")), "text/plain; charset=utf-8"],
    ["HTML", text("<!DOCTYPE html><script>alert(document.cookie)</script>"), "application/octet-stream"],
    ["HTML after white space", text("\n\n   <html><body onload=alert(1)>"), "application/octet-stream"],
    [
      "SVG",
      text('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
      "application/octet-stream",
    ],
    ["XML", text('<?xml version="1.0"?><x/>'), "application/octet-stream"],
    ["text with a NUL", text("abc\u0000def"), "application/octet-stream"],
    ["invalid UTF-8", Uint8Array.of(0x61, 0xc3, 0x28, 0x62), "application/octet-stream"],
    ["UTF-8 cut short at the end", Uint8Array.of(0x61, 0xe2, 0x82), "application/octet-stream"],
    ["bytes of every value", patternBytes(4096), "application/octet-stream"],
  ];
  for (const [what, bytes, type] of cases) {
    it(`is ${type} for ${what}, whatever Content-Type the client sent`, async () => {
      const { token } = await owner();
      const noteId = await newNote(token);
      const response = await upload(token, noteId, bytes, { headers: { "Content-Type": "text/html" } });
      expect(response.status).toBe(201);
      expect(((await response.json()) as { content_type: string }).content_type).toBe(type);
    });
  }

  it("reads UTF-8 whose characters are cut between the body's chunks as text", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const bytes = text("é👋é");
    const { body } = chunkedBody([bytes.subarray(0, 1), bytes.subarray(1, 4), bytes.subarray(4)]);
    const request = new Request(`http://api.test/notes/${noteId}/attachments`, {
      method: "POST",
      body,
      headers: { ...bearer(token), "Content-Length": String(bytes.byteLength) },
    });
    const response = await sendRequest(request);
    expect(((await response.json()) as { content_type: string }).content_type).toBe("text/plain; charset=utf-8");
  });
});

function sendList(token: string, noteId: number) {
  return sendRequest(new Request(`http://api.test/notes/${noteId}/attachments`, { headers: bearer(token) }));
}

function sendDelete(token: string, noteId: number, id: string) {
  return sendRequest(
    new Request(`http://api.test/notes/${noteId}/attachments/${id}`, { method: "DELETE", headers: bearer(token) }),
  );
}
