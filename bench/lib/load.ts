/**
 * Load with autocannon over loopback, and single requests with node:http. Latencies come from autocannon's
 * per-response events (fractional milliseconds, every status), not from its histogram, which keeps whole
 * milliseconds of 2xx answers only.
 */
import { Agent, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import autocannon from "autocannon";

export interface RequestSpec {
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

export type RequestFactory = () => RequestSpec;

export interface RunStats {
  /** Completed responses, any status. */
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  /** Socket errors and timeouts. */
  errors: number;
  /** Responses whose status was not the expected one. */
  unexpected: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function median(values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const JSON_HEADERS = { "content-type": "application/json" };

/** `connections` connections for `seconds`, each request made by `request()`. */
export function runLoad(
  url: string,
  connections: number,
  seconds: number,
  request: RequestFactory,
  expectStatus: number,
): Promise<RunStats> {
  const latencies: number[] = [];
  let unexpected = 0;
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        connections,
        pipelining: 1,
        timeout: 30,
        duration: seconds,
        requests: [
          {
            setupRequest: (req: autocannon.Request) => {
              const spec = request();
              const headers = { ...(spec.body === undefined ? {} : JSON_HEADERS), ...spec.headers };
              return { ...req, method: spec.method, path: spec.path, headers, body: spec.body ?? "" };
            },
          },
        ],
      },
      (err: Error | null, result: autocannon.Result) => {
        clearTimeout(guard);
        if (err) return reject(err);
        latencies.sort((a, b) => a - b);
        const requests = latencies.length;
        resolve({
          requests,
          rps: result.duration > 0 ? requests / result.duration : 0,
          p50: percentile(latencies, 50),
          p99: percentile(latencies, 99),
          errors: result.errors,
          unexpected,
        });
      },
    );
    instance.on("response", (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      latencies.push(responseTime);
      if (statusCode !== expectStatus) unexpected++;
    });
    // Bounded in time whatever happens.
    const guard = setTimeout(() => instance.stop(), (seconds + 60) * 1000);
  });
}

export interface SingleResult {
  status: number;
  ms: number;
  headers: IncomingHttpHeaders;
  body: string;
}

// node:http rather than fetch: Miniflare installs its own undici as the global dispatcher, which refuses
// the content-length that Node's built-in fetch computes.
const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** One request over a keep-alive connection, timed from Node. */
export function send(baseUrl: string, spec: RequestSpec, timeoutMs = 120_000): Promise<SingleResult> {
  return new Promise((resolve, reject) => {
    const body = spec.body === undefined ? undefined : Buffer.from(spec.body);
    const headers = { ...(body ? { ...JSON_HEADERS, "content-length": String(body.length) } : {}), ...spec.headers };
    const started = performance.now();
    const req = httpRequest(
      new URL(spec.path, baseUrl),
      { method: spec.method, agent, headers, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            ms: performance.now() - started,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        );
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${spec.method} ${spec.path}: no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end(body);
  });
}

export function closeConnections(): void {
  agent.destroy();
}
