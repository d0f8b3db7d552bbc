/**
 * The `live` scenario: an account holding LIVE_SOCKETS open live-updates WebSockets (as many devices and tabs
 * would, far past the default cap: the run sets LIVE_SOCKETS_PER_ACCOUNT to that), and writes to its notes
 * from another session of it. It measures:
 *
 * - the time from a write's answer (its last byte, in Node) to its `changed` frame on each socket;
 * - the Durable Object requests a write adds (counted by bench/counting-entry.ts);
 * - the CPU a write costs with the hub switched off (`X-Bench-Hub: off`: no Durable Object request, the
 *   write path as before live updates), with a hub that has no socket, and with LIVE_SOCKETS sockets;
 * - the write path's req/s under load for the account with LIVE_SOCKETS sockets and for one without, and
 *   whether every write's frame reached every socket.
 *
 * The sockets are Node's own WebSocket client, in the process that also runs autocannon and reads the frames:
 * what the clients cost shares the machine's cores with workerd, as autocannon already does.
 */
import { median, percentile, runLoad, send, type RequestSpec } from "./load.ts";
import {
  CPU_REPS,
  cpuPerRequest,
  EMPTY,
  EMPTY_REQUESTS,
  fmt,
  spread,
  type Context,
  type Row,
  type Scenario,
  type Table,
} from "./measure.ts";
import type { WorkerName } from "./runtime.ts";

export const LIVE_SOCKETS = 100;
const READY = '{"type":"ready"}';

export const LIVE: Table = {
  title: "Live updates",
  about:
    `One account with ${LIVE_SOCKETS} open WebSockets (Node's client), NOTES_AUTH=required, POST /notes from another session of it. ` +
    "Latency: writes one at a time, from the answer's last byte to each socket's `changed` frame, in Node. Durable Object requests: " +
    "counted by the counting build. CPU: as the CPU table, through the counting build, writes with the hub switched off (no Durable " +
    `Object request), to a hub without sockets, and to the hub with ${LIVE_SOCKETS}. Throughput: autocannon, the account with the ` +
    "sockets and an account without, in alternating pairs; every write's frame must reach every socket.",
  columns: ["Measure", "Figure"],
};

interface Socket {
  ws: WebSocket;
  /** `changed` frames received, and when (performance.now()) and what the latest ones were while `keep` is set. */
  count: number;
  arrivals: number[];
  frames: string[];
}

/** Sockets record arrival times and frames only while measuring latency; under load they only count. */
let keep = false;

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const postNote = (token: string): RequestSpec => ({
  method: "POST",
  path: "/notes",
  headers: bearer(token),
  body: JSON.stringify({ title: "Live bench note", content: "Written while devices listen." }),
});

/** Resolves once `done()` holds, polling each millisecond; false after `ms`. */
async function until(done: () => boolean, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (!done()) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return true;
}

async function openSocket(ctx: Context, worker: WorkerName, token: string): Promise<Socket | undefined> {
  const base = ctx.rt.urls[worker];
  const answer = await send(base, { method: "POST", path: "/changes/live-ticket", headers: bearer(token) });
  if (answer.status !== 201)
    return void ctx.fail(`live: POST /changes/live-ticket answered ${answer.status}: ${answer.body.slice(0, 200)}`);
  const { ticket } = JSON.parse(answer.body) as { ticket: string };
  const ws = new WebSocket(`${base.replace(/^http/, "ws")}/changes/live?ticket=${ticket}`);
  const socket: Socket = { ws, count: 0, arrivals: [], frames: [] };
  const ready = new Promise<boolean>((resolve) => {
    ws.addEventListener("message", (event: MessageEvent) => {
      const at = performance.now();
      if (event.data === READY) return resolve(true);
      socket.count++;
      if (keep) {
        socket.arrivals.push(at);
        socket.frames.push(String(event.data));
      }
    });
    ws.addEventListener("error", () => resolve(false));
    ws.addEventListener("close", () => resolve(false));
  });
  if (await ready) return socket;
  ctx.fail(`live: a socket of ${worker} closed before its ready frame`);
}

async function openSockets(ctx: Context, worker: WorkerName, token: string): Promise<Socket[]> {
  const sockets: Socket[] = [];
  for (let i = 0; i < LIVE_SOCKETS; i++) {
    const socket = await openSocket(ctx, worker, token);
    if (!socket) break;
    sockets.push(socket);
  }
  return sockets;
}

/** Writes one at a time: each socket's delay from the answer to the frame, and the last socket's per write. */
async function latency(ctx: Context, sockets: Socket[], writer: string) {
  const all: number[] = [];
  const last: number[] = [];
  keep = true;
  for (let i = 0; i < (ctx.opts.smoke ? 10 : 200); i++) {
    const before = sockets.map((socket) => socket.arrivals.length);
    const answer = await send(ctx.rt.urls.appPrivate, postNote(writer));
    const answeredAt = performance.now();
    if (answer.status !== 201) return void ctx.fail(`live: POST /notes answered ${answer.status}`);
    if (!(await until(() => sockets.every((socket, s) => socket.arrivals.length > before[s]!), 5_000)))
      return void ctx.fail("live: a frame took over 5 s");
    const expected = JSON.stringify({ type: "changed", bookmark: answer.headers["x-d1-bookmark"] });
    if (sockets.some((socket, s) => socket.frames[before[s]!] !== expected))
      ctx.fail(`live: a frame was not ${expected}`);
    const delays = sockets.map((socket, s) => socket.arrivals[before[s]!]! - answeredAt);
    all.push(...delays);
    last.push(Math.max(...delays));
  }
  keep = false;
  return { all: all.sort((a, b) => a - b), last: last.sort((a, b) => a - b) };
}

/** Durable Object requests per write, from the counting build's totals. */
async function hubRequestsPerWrite(ctx: Context, writer: string): Promise<number> {
  const stats = async () =>
    (
      JSON.parse((await send(ctx.rt.urls.countingPrivate, { method: "GET", path: "/__bench/d1-stats" })).body) as {
        hubRequests: number;
      }
    ).hubRequests;
  const before = await stats();
  const writes = ctx.opts.smoke ? 5 : 50;
  for (let i = 0; i < writes; i++) await send(ctx.rt.urls.countingPrivate, postNote(writer));
  // The poke goes out after the answer (waitUntil).
  await new Promise((resolve) => setTimeout(resolve, 200));
  return ((await stats()) - before) / writes;
}

/** CPU per write through the counting build: the hub off, a hub without sockets, and the hub with LIVE_SOCKETS. */
async function cpuPerWrite(ctx: Context, quiet: string, writer: string) {
  const requests = ctx.opts.smoke ? 10 : 200;
  const variants = {
    off: { ...postNote(quiet), headers: { ...bearer(quiet), "X-Bench-Hub": "off" } },
    none: postNote(quiet),
    sockets: postNote(writer),
  };
  const ms: Record<keyof typeof variants, number[]> = { off: [], none: [], sockets: [] };
  for (let rep = 0; rep < CPU_REPS; rep++) {
    const baseline = await cpuPerRequest(ctx, "empty", EMPTY_REQUESTS, EMPTY);
    for (const [name, spec] of Object.entries(variants) as [keyof typeof variants, RequestSpec][]) {
      ms[name].push(
        (await cpuPerRequest(ctx, "countingPrivate", requests, {
          label: `live CPU (${name})`,
          expectStatus: 201,
          next: () => spec,
        })) - baseline,
      );
    }
  }
  return ms;
}

/**
 * req/s of POST /notes under load for the account with sockets and one without, pairs alternating; frames delivered.
 */
async function throughputWith(ctx: Context, sockets: Socket[], writer: string, quiet: string) {
  const { opts, rt } = ctx;
  const runs = {
    sockets: [] as { rps: number; p50: number; p99: number }[],
    none: [] as { rps: number; p50: number; p99: number }[],
  };
  let delivered = 0;
  let expected = 0;
  const load = (token: string, seconds: number) =>
    runLoad(rt.urls.appPrivate, opts.connections, seconds, () => postNote(token), 201);
  await load(writer, opts.warmup);
  await load(quiet, opts.warmup);
  for (let pair = 1; pair <= opts.pairs; pair++) {
    for (const who of pair % 2 ? (["sockets", "none"] as const) : (["none", "sockets"] as const)) {
      const before = sockets.map((socket) => socket.count);
      const run = await load(who === "sockets" ? writer : quiet, opts.duration);
      if (run.errors || run.unexpected)
        ctx.fail(`live load (${who}): ${run.errors} errors, ${run.unexpected} answers other than 201`);
      runs[who].push(run);
      ctx.log(
        `  ${who.padEnd(7)} ${pair}/${opts.pairs} ${fmt(run.rps, 1).padStart(9)} req/s  p50 ${fmt(run.p50).padStart(8)} ms  p99 ${fmt(run.p99).padStart(8)} ms`,
      );
      if (who !== "sockets") continue;
      // Every write made by the account, whatever its answer's timing, is one frame on every socket.
      await until(() => sockets.every((socket, s) => socket.count - before[s]! >= run.requests), 10_000);
      delivered += sockets.reduce((sum, socket, s) => sum + Math.min(socket.count - before[s]!, run.requests), 0);
      expected += run.requests * sockets.length;
    }
  }
  return { runs, delivered, expected };
}

export function liveUpdates(signIn: (ctx: Context, account: "writer" | "quiet") => Promise<string>): Scenario {
  return {
    key: "live",
    async run(ctx) {
      const [holder, writer, quiet] = [
        await signIn(ctx, "writer"),
        await signIn(ctx, "writer"),
        await signIn(ctx, "quiet"),
      ];
      const sockets = await openSockets(ctx, "appPrivate", holder);
      const counted = await openSockets(ctx, "countingPrivate", holder);
      ctx.log(`  ${sockets.length} + ${counted.length} sockets open (the real build's hub, the counting build's)`);
      try {
        const delays = await latency(ctx, sockets, writer);
        const perWrite = await hubRequestsPerWrite(ctx, writer);
        const cpu = ctx.pids.length ? await cpuPerWrite(ctx, quiet, writer) : undefined;
        const load = await throughputWith(ctx, sockets, writer, quiet);
        const rps = (r: { rps: number }[]) => median(r.map((x) => x.rps));
        const ratios = load.runs.sockets.map((run, i) => run.rps / load.runs.none[i]!.rps);
        const row = (what: string, figure: string, data?: unknown): Row => ({
          table: LIVE,
          key: "live",
          cells: [what, figure],
          data,
        });
        const rows = [
          row(
            `answer → frame, each of ${sockets.length} sockets, ${delays?.last.length ?? 0} writes: p50 / p99 ms`,
            delays ? `${fmt(percentile(delays.all, 50))} / ${fmt(percentile(delays.all, 99))}` : "-",
            delays,
          ),
          row(
            "answer → frame on the last socket to hear, per write: p50 / p99 ms",
            delays ? `${fmt(percentile(delays.last, 50))} / ${fmt(percentile(delays.last, 99))}` : "-",
          ),
          row("Durable Object requests per write (the poke)", fmt(perWrite), perWrite),
          row(
            "CPU per write, hub off (the write path before live updates), ms",
            cpu ? spread(cpu.off) : "not measured",
            cpu,
          ),
          row("CPU per write, to a hub without sockets, ms", cpu ? spread(cpu.none) : "-"),
          row(`CPU per write, to the hub with ${counted.length} sockets, ms`, cpu ? spread(cpu.sockets) : "-"),
          row(
            `POST /notes req/s, the account with ${sockets.length} sockets / without (p50 ms)`,
            `${fmt(rps(load.runs.sockets), 1)} (${fmt(median(load.runs.sockets.map((r) => r.p50)))}) / ${fmt(rps(load.runs.none), 1)} (${fmt(median(load.runs.none.map((r) => r.p50)))})`,
            load.runs,
          ),
          row("with sockets / without (lowest–highest pair)", spread(ratios), ratios),
          row(
            "frames delivered under load (every write to every socket)",
            load.expected
              ? `${fmt((100 * load.delivered) / load.expected)} % of ${load.expected.toLocaleString("en-US")}`
              : "-",
          ),
        ];
        for (const r of rows) ctx.log(`  ${r.cells[0]}: ${r.cells[1]}`);
        return rows;
      } finally {
        for (const socket of [...sockets, ...counted]) socket.ws.close(1000);
      }
    },
  };
}
