import { describe, expect, it } from "vitest";
import { AttachmentMessage } from "../../../src/notes/attachments/messages";
import { call } from "../../support/app";

/** /openapi.json documents the attachment routes from their describeRoute, binary bodies included. */

type Media = Record<string, { schema: Record<string, unknown> }>;
interface Operation {
  requestBody?: { content: Media };
  responses: Record<string, { content?: Media; headers?: Record<string, unknown> }>;
}

async function paths(): Promise<Record<string, Record<string, Operation>>> {
  const doc = (await (await call("GET", "/openapi.json")).json()) as {
    paths: Record<string, Record<string, Operation>>;
  };
  return doc.paths;
}

describe("GET /openapi.json", () => {
  it("documents every attachment route, the upload's and the downloads' bodies as binary", async () => {
    const documented = await paths();
    const binary = { schema: { type: "string", format: "binary" } };
    const upload = documented["/notes/{id}/attachments"]!.post!;
    expect(upload.requestBody!.content).toEqual({ "application/octet-stream": binary });
    expect(Object.keys(upload.responses)).toEqual(
      expect.arrayContaining(["201", "400", "401", "404", "409", "411", "413"]),
    );
    expect(upload.responses["201"]!.content!["application/json"]!.schema).toMatchObject({
      required: ["id", "note_id", "filename", "content_type", "size", "sha256", "created_at", "url"],
    });
    expect(
      documented["/notes/{id}/attachments"]!.get!.responses["200"]!.content!["application/json"]!.schema,
    ).toMatchObject({
      type: "array",
    });
    for (const download of [
      documented["/notes/{id}/attachments/{attachmentId}"]!.get!,
      documented["/attachments/{attachmentId}"]!.get!,
    ]) {
      expect(download.responses["200"]!.content).toEqual({ "application/octet-stream": binary });
      expect(download.responses["206"]!.content).toEqual({ "application/octet-stream": binary });
      expect(Object.keys(download.responses)).toEqual(expect.arrayContaining(["304", "404", "416"]));
    }
    expect(Object.keys(documented["/attachments/{attachmentId}"]!.get!.responses)).toContain("403");
    expect(Object.keys(documented["/notes/{id}/attachments/{attachmentId}"]!.delete!.responses)).toContain("204");
  });

  it("names every message the attachment routes answer with", async () => {
    const text = JSON.stringify(await paths());
    for (const message of Object.values(AttachmentMessage))
      expect(text, message).toContain(JSON.stringify(message).slice(1, -1));
  });
});
