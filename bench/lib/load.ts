/**
 * Load generation with autocannon over loopback, and sequential single requests with node:http.
 *
 * Latencies are collected from autocannon's per-response events (fractional milliseconds, every status
 * included), not from its histogram, which keeps whole milliseconds of 2xx answers only.
 */
import { Agent, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import autocannon from "autocannon";

export interface RequestSpec {
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
  path: string;
  body?: string;
  /** More request headers (an Authorization header, say). */
  headers?: Record<string, string>;
}

export type RequestFactory = () => RequestSpec;

export interface RunStats {
  /** Completed responses, any status. */
  requests: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  mean: number;
  /** Socket errors and timeouts (timeouts included). */
  errors: number;
  timeouts: number;
  /** Responses whose status was not 2xx. */
  non2xx: number;
  /** Responses whose status was not the expected one (2xx for most scenarios, 404 for the 404 scenario). */
  unexpected: number;
  statusCodes: Record<string, number>;
  /**
   * workerd's main-thread CPU per completed response over the run, in µs, and the share of the run's wall
   * time that thread ran: set by the bench where /proc exists (bench/lib/cpu.ts).
   */
  mainCpuUs?: number;
  mainBusy?: number;
}

export interface LoadOptions {
  url: string;
  connections: number;
  /** Seconds; ignored when `amount` is set. */
  duration: number;
  /** A fixed number of requests instead of a duration. */
  amount?: number;
  /** Seconds a single request may take before autocannon counts a timeout. */
  timeout: number;
  request: RequestFactory;
  expectStatus: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function median(values: number[]): number {
  const finite = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (finite.length === 0) return Number.NaN;
  const mid = finite.length >> 1;
  return finite.length % 2 ? finite[mid]! : (finite[mid - 1]! + finite[mid]!) / 2;
}

const JSON_HEADERS = { "content-type": "application/json" };

export function runLoad(options: LoadOptions): Promise<RunStats> {
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  return new Promise((resolve, reject) => {
    let guard: NodeJS.Timeout | undefined = undefined;
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        pipelining: 1,
        timeout: options.timeout,
        ...(options.amount ? { amount: options.amount } : { duration: options.duration }),
        requests: [
          {
            setupRequest: (req: autocannon.Request) => {
              const spec = options.request();
              return {
                ...req,
                method: spec.method,
                path: spec.path,
                headers: { ...(spec.body === undefined ? {} : JSON_HEADERS), ...spec.headers },
                body: spec.body ?? "",
              };
            },
          },
        ],
      },
      (err: Error | null, result: autocannon.Result) => {
        clearTimeout(guard);
        if (err) return reject(err);
        latencies.sort((a, b) => a - b);
        const requests = latencies.length;
        const unexpected = Object.entries(statusCodes)
          .filter(([code]) => Number(code) !== options.expectStatus)
          .reduce((sum, [, count]) => sum + count, 0);
        resolve({
          requests,
          seconds: result.duration,
          rps: result.duration > 0 ? requests / result.duration : 0,
          p50: percentile(latencies, 50),
          p99: percentile(latencies, 99),
          mean: requests ? latencies.reduce((a, b) => a + b, 0) / requests : Number.NaN,
          errors: result.errors,
          timeouts: result.timeouts,
          non2xx: result.non2xx,
          unexpected,
          statusCodes,
        });
      },
    );
    instance.on("response", (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      latencies.push(responseTime);
      statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
    });
    // Bounded in time whatever happens: stop the run well after it should have ended.
    const expectedSeconds = options.amount ? options.timeout * Math.ceil(options.amount / options.connections) : options.duration;
    guard = setTimeout(() => instance.stop(), (expectedSeconds + options.timeout + 30) * 1000);
  });
}

export interface SingleResult {
  status: number;
  ms: number;
  headers: IncomingHttpHeaders;
  body: string;
}

// node:http rather than fetch: Miniflare installs its own undici as the global dispatcher, which
// refuses the content-length that Node's built-in fetch computes.
const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** One request over a keep-alive connection, timed from Node. */
export function send(baseUrl: string, spec: RequestSpec, timeoutMs = 120_000): Promise<SingleResult> {
  return new Promise((resolve, reject) => {
    const body = spec.body === undefined ? undefined : Buffer.from(spec.body);
    const headers = { ...(body ? { ...JSON_HEADERS, "content-length": String(body.length) } : {}), ...spec.headers };
    const started = performance.now();
    const req = httpRequest(new URL(spec.path, baseUrl), { method: spec.method, agent, headers, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", reject);
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, headers: res.headers, body: Buffer.concat(chunks).toString() }),
      );
    });
    req.on("timeout", () => req.destroy(new Error(`${spec.method} ${spec.path}: no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end(body);
  });
}

export interface DownloadResult {
  status: number;
  ms: number;
  bytes: number;
  /** The first and last few bytes of the body, for a plausibility check. */
  head: string;
  tail: string;
}

/**
 * One GET whose body is counted and dropped as it arrives (a list of hundreds of MiB need not be held).
 * `signal` aborts it (the result then has status 0).
 */
export function download(baseUrl: string, path: string, timeoutMs = 300_000, signal?: AbortSignal): Promise<DownloadResult> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let bytes = 0;
    let head = "";
    let tail = "";
    const req = httpRequest(new URL(path, baseUrl), { method: "GET", agent, timeout: timeoutMs, signal }, (res) => {
      res.on("data", (chunk: Buffer) => {
        if (head.length < 64) head += chunk.subarray(0, 64 - head.length).toString("latin1");
        tail = (tail + chunk.subarray(-64).toString("latin1")).slice(-64);
        bytes += chunk.length;
      });
      res.on("error", (err) => (signal?.aborted ? resolve({ status: 0, ms: performance.now() - started, bytes, head, tail }) : reject(err)));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, bytes, head, tail }));
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${path}: no answer within ${timeoutMs} ms`)));
    req.on("error", (err) => (signal?.aborted ? resolve({ status: 0, ms: performance.now() - started, bytes, head, tail }) : reject(err)));
    req.end();
  });
}

export function closeConnections(): void {
  agent.destroy();
}
