/**
 * V8 CPU profiles of one isolate (a worker's, or the database's), taken through workerd's inspector (the
 * Chrome DevTools protocol over a WebSocket) while the bench loads it. Unlike the process CPU of cpu.ts, a
 * profile sees one isolate's JavaScript and the runtime calls it makes: where the time goes, function by
 * function, and how that compares with the floor's. Its busy time is a share, not a cost to add up: time the
 * thread spent in other isolates is partly counted too (bench/README.md).
 */

/** The parts of a V8 `Profiler.Profile` the summary reads. */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** One row of a profile's bottom-up summary: a function and the time spent in it, not in its callees. */
export interface SelfTime {
  name: string;
  ms: number;
  share: number;
}

/** How much of a profile the isolate spent running (not idle), and where. */
export interface ProfileSummary {
  /** Milliseconds the isolate ran code over the profile (idle and the sampler's own program node excluded). */
  busyMs: number;
  /** The functions that took the most of that time, most first. */
  top: SelfTime[];
}

/** V8's pseudo-functions that are not the isolate running code. */
const IDLE = new Set(["(idle)", "(program)"]);

/**
 * workerd's inspector names a user's worker `core:user:<name>`, and Miniflare's own D1 worker (the Durable
 * Object that runs SQLite for every worker's binding) `d1:db`.
 */
export const DATABASE_ISOLATE = "d1:db";
const inspectorTarget = (worker: string) => (worker === DATABASE_ISOLATE ? worker : `core:user:${worker}`);

/** The inspector's WebSocket for one of workerd's isolates. */
async function connect(port: number, worker: string): Promise<WebSocket> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/${inspectorTarget(worker)}`);
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("error", () => reject(new Error(`cannot reach the inspector of worker ${worker} on port ${port}`)), { once: true });
  });
  return socket;
}

/** Sends DevTools protocol commands one at a time and resolves each with its result. */
function commander(socket: WebSocket) {
  let nextId = 0;
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
    const pending = message.id === undefined ? undefined : waiting.get(message.id);
    if (!pending) return;
    waiting.delete(message.id!);
    if (message.error) pending.reject(new Error(message.error.message));
    else pending.resolve(message.result);
  });
  return <T>(method: string, params: Record<string, unknown> = {}) =>
    new Promise<T>((resolve, reject) => {
      const id = ++nextId;
      waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      socket.send(JSON.stringify({ id, method, params }));
    });
}

/** Profiles `worker`'s isolate while `during` runs, sampling every `intervalMicros`. */
export async function profileWorker(port: number, worker: string, during: () => Promise<void>, intervalMicros = 100): Promise<CpuProfile> {
  const socket = await connect(port, worker);
  try {
    const send = commander(socket);
    await send("Profiler.enable");
    await send("Profiler.setSamplingInterval", { interval: intervalMicros });
    await send("Profiler.start");
    await during();
    const { profile } = await send<{ profile: CpuProfile }>("Profiler.stop");
    await send("Profiler.disable");
    return profile;
  } finally {
    socket.close();
  }
}

/** Time per function (bottom-up, self time), from the samples and the time between them. */
export function summarizeProfile(profile: CpuProfile, topN = 15): ProfileSummary {
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((nodeId, i) => {
    const frame = byNode.get(nodeId)?.callFrame;
    const micros = profile.timeDeltas[i + 1] ?? 0;
    if (!frame || IDLE.has(frame.functionName)) return;
    const file = frame.url.split("/").pop() ?? "";
    const name = `${frame.functionName || "(anonymous)"} ${file}${file ? `:${frame.lineNumber + 1}` : ""}`.trim();
    self.set(name, (self.get(name) ?? 0) + micros);
    busy += micros;
  });
  const top = [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, topN)
    .map(([name, micros]) => ({ name, ms: micros / 1000, share: busy ? micros / busy : 0 }));
  return { busyMs: busy / 1000, top };
}
