/**
 * The `attachments` scenario (docs/attachments.md), NOTES_AUTH=required, one account and one note:
 *
 * - upload and download of a 5 MiB file, one request at a time: MiB/s from Node's clock (the request's first
 *   byte to the answer's last), and workerd's CPU per request as the CPU table takes it (the local R2 and D1
 *   run in the same process, so an upper bound), against a floor: the counting build's `/__bench/r2`, the
 *   request's body straight into R2 and the object straight back, so the difference is our own work;
 * - the Worker's peak memory while an upload streams, for 5 and 20 MiB: its isolate's heap (V8's used heap
 *   plus ArrayBuffer backing stores, from the DevTools protocol's Runtime.getHeapUsage, sampled while the
 *   upload runs), above what it held just before. The same is taken of
 *   `POST /__bench/buffer`, which reads its body whole as an upload that buffered would: it shows that the
 *   measure sees such memory. Both go through the counting build, whose isolate is the one sampled.
 */
import { randomBytes } from "node:crypto";
import { cpuNanoseconds } from "./cpu.ts";
import { median, send } from "./load.ts";
import {
  CPU_REPS,
  cpuPerRequest,
  EMPTY,
  EMPTY_REQUESTS,
  spread,
  type Context,
  type Row,
  type Table,
} from "./measure.ts";
import type { WorkerName } from "./runtime.ts";

const MiB = 1024 * 1024;
/** The file of the throughput and CPU rows, and the sizes of the memory rows. */
export const FILE_MiB = 5;
const MEMORY_SIZES_MiB = [5, 20];

export const ATTACHMENTS: Table = {
  title: "Attachments",
  about:
    `NOTES_AUTH=required, one request at a time. MiB/s: ${FILE_MiB} MiB over Node's time from the request to the answer's last byte. ` +
    "CPU: workerd's CPU per request minus an empty worker's, as the CPU table (the local R2 and D1 are in the same process: an upper bound). " +
    "Floor: the counting build's /__bench/r2, the request's body straight into R2 and the object's body straight out. " +
    "Peak memory: the isolate's used heap plus ArrayBuffer backing stores (Runtime.getHeapUsage over the DevTools protocol), sampled " +
    "while the request runs, above the value just before it; through the counting build, whose /__bench/buffer reads " +
    "its body whole with arrayBuffer() for comparison.",
  columns: ["Measure", "runs", "ours (lowest–highest)", "floor, or the body read whole (lowest–highest)"],
};

/** The DevTools protocol over a WebSocket: one method call at a time. */
async function devtools(url: string) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", reject, { once: true });
  });
  let next = 0;
  const pending = new Map<number, (result: Record<string, number>) => void>();
  ws.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: Record<string, number> };
    if (message.id !== undefined) pending.get(message.id)?.(message.result ?? {});
  });
  const call = (method: string) =>
    new Promise<Record<string, number>>((resolve, reject) => {
      const id = ++next;
      const timer = setTimeout(() => reject(new Error(`bench: ${method} got no answer`)), 10_000);
      pending.set(id, (result) => {
        clearTimeout(timer);
        resolve(result);
      });
      ws.send(JSON.stringify({ id, method }));
    });
  return { call, close: () => ws.close() };
}
type DevTools = Awaited<ReturnType<typeof devtools>>;

/** The isolate's heap in bytes: what V8 uses, and the ArrayBuffers' memory outside it. */
async function heapBytes(tools: DevTools): Promise<number> {
  const usage = await tools.call("Runtime.getHeapUsage");
  return (usage.usedSize ?? 0) + (usage.backingStorageSize ?? 0);
}

/**
 * The most the isolate held while `request` ran above what it held just before, in MiB. (workerd's inspector
 * does not answer HeapProfiler.collectGarbage, so the base holds whatever garbage is left from before.)
 */
async function peakDuring(tools: DevTools, request: () => Promise<unknown>): Promise<number> {
  const base = await heapBytes(tools);
  let peak = base;
  let done = false;
  const running = request().finally(() => (done = true));
  while (!done) {
    peak = Math.max(peak, await heapBytes(tools));
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  await running;
  peak = Math.max(peak, await heapBytes(tools));
  return (peak - base) / MiB;
}

/** Milliseconds of `once()`, `runs` times; and workerd's CPU per call above an empty worker's per request. */
async function timed(ctx: Context, runs: number, once: () => Promise<number>): Promise<{ ms: number; cpu: number }> {
  const baseline = ctx.pids.length ? await cpuPerRequest(ctx, "empty", EMPTY_REQUESTS, EMPTY) : 0;
  const before = ctx.pids.length ? cpuNanoseconds(ctx.pids) : 0;
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) ms.push(await once());
  return { ms: median(ms), cpu: ctx.pids.length ? (cpuNanoseconds(ctx.pids) - before) / runs / 1e6 - baseline : NaN };
}

/** The requests the scenario makes, for an account's session and note. */
function requests(ctx: Context, auth: Record<string, string>, noteId: number) {
  const { rt } = ctx;
  let lastId = "";
  const upload = async (worker: WorkerName, bytes: Buffer, path = `/notes/${noteId}/attachments`) => {
    const started = performance.now();
    const response = await fetch(`${rt.urls[worker]}${path}`, { method: "POST", headers: auth, body: bytes });
    const text = await response.text();
    if (!response.ok) ctx.fail(`attachments: POST ${path} answered ${response.status}: ${text.slice(0, 200)}`);
    else if (path.startsWith("/notes/")) lastId = (JSON.parse(text) as { id: string }).id;
    return performance.now() - started;
  };
  const download = async (worker: WorkerName, path: string, size: number) => {
    const started = performance.now();
    const response = await fetch(`${rt.urls[worker]}${path}`, { headers: auth });
    const length = (await response.arrayBuffer()).byteLength;
    if (response.status !== 200 || length !== size)
      ctx.fail(`attachments: GET ${path} answered ${response.status} with ${length} bytes`);
    return performance.now() - started;
  };
  return { upload, download, lastPath: () => `/notes/${noteId}/attachments/${lastId}` };
}

/** The scenario, with the session of an account the other scenarios leave alone. */
export function attachmentsScenario(signIn: (ctx: Context) => Promise<string>) {
  return {
    key: "attachments",
    async run(ctx: Context): Promise<Row[]> {
      const { rt, opts } = ctx;
      const auth = { Authorization: `Bearer ${await signIn(ctx)}` };
      const note = await send(rt.urls.appPrivate, {
        method: "POST",
        path: "/notes",
        headers: auth,
        body: JSON.stringify({ title: "Bench attachments", content: "" }),
      });
      if (note.status !== 201) throw new Error(`bench: POST /notes answered ${note.status}`);
      const { upload, download, lastPath } = requests(ctx, auth, (JSON.parse(note.body) as { id: number }).id);
      const file = randomBytes(FILE_MiB * MiB);
      const runs = opts.smoke ? 2 : 10;
      const row = (key: string, measure: string, count: string, ours: number[], other: number[], digits = 2): Row => ({
        table: ATTACHMENTS,
        key: `attachments:${key}`,
        cells: [measure, count, spread(ours, digits), spread(other, digits)],
        data: { ours, other },
      });

      const rows: Row[] = [];
      const sides = {
        upload: { ours: () => upload("appPrivate", file), floor: () => upload("countingPrivate", file, "/__bench/r2") },
        download: {
          ours: () => download("appPrivate", lastPath(), file.length),
          floor: () => download("countingPrivate", "/__bench/r2", file.length),
        },
      };
      for (const [label, side] of Object.entries(sides)) {
        await side.ours(); // warm the isolates
        await side.floor();
        const ours: { ms: number; cpu: number }[] = [];
        const floor: { ms: number; cpu: number }[] = [];
        for (let rep = 0; rep < CPU_REPS; rep++) {
          ours.push(await timed(ctx, runs, side.ours));
          floor.push(await timed(ctx, runs, side.floor));
        }
        const rate = (r: { ms: number }[]) => r.map((x) => FILE_MiB / (x.ms / 1000));
        const cpu = (r: { cpu: number }[]) => r.map((x) => x.cpu);
        ctx.log(
          `  ${label} ${FILE_MiB} MiB: ours ${spread(rate(ours), 1)} MiB/s, CPU ${spread(cpu(ours))} ms; floor ${spread(rate(floor), 1)} MiB/s, CPU ${spread(cpu(floor))} ms`,
        );
        const count = `${runs} × ${CPU_REPS}`;
        rows.push(
          row(`${label}:rate`, `${label} ${FILE_MiB} MiB: MiB/s`, count, rate(ours), rate(floor), 1),
          row(`${label}:cpu`, `${label} ${FILE_MiB} MiB: CPU ms per request`, count, cpu(ours), cpu(floor)),
        );
      }

      const tools = await devtools(await rt.inspector("countingPrivate"));
      try {
        for (const size of MEMORY_SIZES_MiB) {
          const bytes = randomBytes(size * MiB);
          const peaks = { upload: [] as number[], buffer: [] as number[] };
          await upload("countingPrivate", bytes);
          await upload("countingPrivate", bytes, "/__bench/buffer");
          for (let rep = 0; rep < CPU_REPS; rep++) {
            peaks.upload.push(await peakDuring(tools, () => upload("countingPrivate", bytes)));
            peaks.buffer.push(await peakDuring(tools, () => upload("countingPrivate", bytes, "/__bench/buffer")));
          }
          ctx.log(
            `  peak memory, ${size} MiB: upload ${spread(peaks.upload, 1)} MiB, read whole ${spread(peaks.buffer, 1)} MiB`,
          );
          rows.push(
            row(
              `memory:${size}`,
              `peak memory (MiB) while ${size} MiB arrive`,
              String(CPU_REPS),
              peaks.upload,
              peaks.buffer,
              1,
            ),
          );
        }
      } finally {
        tools.close();
      }
      return rows;
    },
  };
}
