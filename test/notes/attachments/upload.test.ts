import { describe, expect, it } from "vitest";
import { JSON_TYPE } from "../../helpers";
import { newNote, objectBytes, owner, PNG, sha256Of, storedRow, upload } from "./support";

describe("POST /notes/{id}/attachments", () => {
  it("stores the bytes in R2 and answers 201 with the attachment and its Location", async () => {
    const { token } = await owner();
    const noteId = await newNote(token);
    const response = await upload(token, noteId, PNG, { filename: "dot.png" });
    const body = (await response.json()) as Record<string, unknown>;
    expect(response.status).toBe(201);
    expect(response.headers.get("content-type")).toBe(JSON_TYPE);
    expect(body).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      note_id: noteId,
      filename: "dot.png",
      content_type: "image/png",
      size: PNG.byteLength,
      sha256: await sha256Of(PNG),
      created_at: expect.stringMatching(/Z$/),
      url: expect.stringMatching(
        /^http:\/\/api\.test\/attachments\/[A-Za-z0-9_-]{22}\?expires=\d+&signature=[0-9a-f]{64}$/,
      ),
    });
    expect(response.headers.get("location")).toBe(`/notes/${noteId}/attachments/${String(body.id)}`);
    expect(await objectBytes(String(body.id))).toEqual(PNG);
    expect(await storedRow(String(body.id))).toMatchObject({ size: PNG.byteLength, content_type: "image/png" });
  });
});
