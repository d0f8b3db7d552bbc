/**
 * A webhook receiver on loopback for the tests, run in Node by vitest's globalSetup: it records every delivery (the
 * Standard Webhooks headers and the raw body, to verify as a receiver would) and answers as a test scripted it for the
 * account the event is about (POST /_test/script: a list of statuses, or "hang" for no answer), 204 otherwise. The
 * tests read what it got with GET /_test/received?id=<webhook-id> or ?user_id=<id>.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Answer, Delivery, WebhookFixture, WebhookScript } from "./types.ts";

const HOST = "127.0.0.1";

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function sendJson(res: ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

/** The account a delivery's body is about (`data.user_id`), if it parses. */
function userOf(body: string): number | undefined {
  try {
    const parsed = JSON.parse(body) as { data?: { user_id?: unknown } };
    return typeof parsed.data?.user_id === "number" ? parsed.data.user_id : undefined;
  } catch {
    return undefined;
  }
}

export async function startWebhookReceiver(): Promise<{ fixture: WebhookFixture; stop: () => Promise<void> }> {
  const scripts = new Map<number, Answer[]>();
  const deliveries: Array<Delivery & { userId: number | undefined }> = [];
  const hanging = new Set<ServerResponse>();

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", `http://${HOST}`);
      const body = await readBody(req);
      if (req.method === "POST" && url.pathname === "/_test/script") {
        const script = JSON.parse(body) as WebhookScript;
        scripts.set(script.userId, [...script.answers]);
        return sendJson(res, { ok: true });
      }
      if (req.method === "GET" && url.pathname === "/_test/received") {
        const id = url.searchParams.get("id");
        const userId = url.searchParams.get("user_id");
        return sendJson(
          res,
          deliveries.filter((d) => (id === null || d.id === id) && (userId === null || String(d.userId) === userId)),
        );
      }
      if (req.method !== "POST" || url.pathname !== "/hook") return sendJson(res, { error: "not found" }, 404);
      const userId = userOf(body);
      const answer = (userId !== undefined ? scripts.get(userId)?.shift() : undefined) ?? 204;
      deliveries.push({
        id: String(req.headers["webhook-id"] ?? ""),
        timestamp: String(req.headers["webhook-timestamp"] ?? ""),
        signature: String(req.headers["webhook-signature"] ?? ""),
        contentType: String(req.headers["content-type"] ?? ""),
        body,
        answered: answer,
        receivedAt: Date.now(),
        userId,
      });
      // A receiver that never answers: the service gives up after its timeout; the socket closes with it.
      if (answer === "hang") return void hanging.add(res);
      res.writeHead(answer).end();
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://${HOST}:${port}`;
  return {
    fixture: { url: `${base}/hook`, control: base, secret: `whsec_${randomBytes(32).toString("base64")}` },
    stop: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
