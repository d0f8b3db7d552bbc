/**
 * CPU time of the workerd process that Miniflare started, which is what Workers bills per request (and
 * what the Free plan caps at 10 ms): the sum over its threads of the time they ran, from
 * /proc/<pid>/task/<tid>/schedstat (nanoseconds; Linux only), and the main thread's alone. D1 runs inside
 * the same process locally, so a reading includes SQLite's own work, which Cloudflare does not bill to the
 * Worker: an upper bound.
 */
import { readdirSync, readFileSync } from "node:fs";

/** The pids of every workerd below this Node process (Miniflare spawns one). */
export function workerdPids(): number[] {
  const children = new Map<number, number[]>();
  const names = new Map<number, string>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after its last ")".
      const close = stat.lastIndexOf(")");
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      names.set(Number(entry), stat.slice(stat.indexOf("(") + 1, close));
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // The process ended while we looked.
    }
  }
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      if (names.get(child)?.startsWith("workerd")) found.push(child);
      walk(child);
    }
  };
  walk(process.pid);
  return found;
}

/**
 * Nanoseconds of CPU the processes have used so far: over all their threads, and on each one's main
 * thread alone. The main thread runs every isolate (ours, the floor's, D1's) and, locally, SQLite: it is
 * what throughput under load waits on, and the nearer to what Workers bills, an isolate's own thread.
 * The other threads are V8's (concurrent garbage collection, compilers) and workerd's.
 */
export function cpuNanoseconds(pids: number[]): { all: number; main: number } {
  let all = 0;
  let main = 0;
  for (const pid of pids) {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
        all += ns;
        if (tid === String(pid)) main += ns;
      } catch {
        // The thread ended while we looked; its time is lost to this reading, which the median absorbs.
      }
    }
  }
  return { all, main };
}
