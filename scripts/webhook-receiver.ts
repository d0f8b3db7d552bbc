/**
 * `npm run webhook:receiver`: a webhook receiver for trying the service's webhooks locally
 * (docs/operations.md, "Trying it"). It listens on 127.0.0.1 (`WEBHOOK_PORT`, default 9500, path any), checks
 * each delivery's Standard Webhooks signature with `WEBHOOK_SECRET` through the `standardwebhooks` library, as a
 * team's own receiver would, and prints one line per delivery: `verified <webhook-id> <type> <body>`, or
 * `REJECTED <webhook-id> <why>`. It answers 204 to a verified delivery and 401 to any other.
 */
import { createServer, type IncomingMessage } from "node:http";
import { Webhook } from "standardwebhooks";

export const DEFAULT_WEBHOOK_PORT = 9500;

/** The body of a request, as text. */
async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks).toString("utf8");
}

/** The Standard Webhooks headers of a request, as the library wants them. */
function webhookHeaders(req: IncomingMessage): Record<string, string> {
  const one = (name: string) => String(req.headers[name] ?? "");
  return {
    "webhook-id": one("webhook-id"),
    "webhook-timestamp": one("webhook-timestamp"),
    "webhook-signature": one("webhook-signature"),
  };
}

function main(): void {
  const secret = process.env.WEBHOOK_SECRET ?? "";
  if (!secret.startsWith("whsec_")) {
    console.error("Set WEBHOOK_SECRET to the service's secret (whsec_…).");
    process.exit(1);
  }
  const verifier = new Webhook(secret);
  const port = Number(process.env.WEBHOOK_PORT ?? DEFAULT_WEBHOOK_PORT);
  const server = createServer((req, res) => {
    void bodyOf(req).then((body) => {
      const headers = webhookHeaders(req);
      try {
        const event = verifier.verify(body, headers) as { type?: unknown };
        console.log(`verified ${headers["webhook-id"]} ${String(event.type)} ${body}`);
        res.writeHead(204).end();
      } catch (err) {
        console.log(
          `REJECTED ${headers["webhook-id"] || "(no id)"} ${err instanceof Error ? err.message : String(err)}`,
        );
        res.writeHead(401).end();
      }
    });
  });
  server.listen(port, "127.0.0.1", () => console.log(`webhook receiver on http://127.0.0.1:${port}/hook`));
}

main();
