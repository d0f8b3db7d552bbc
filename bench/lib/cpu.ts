/**
 * CPU time of the workerd process that Miniflare started, which is what Workers bills per request (and
 * what the Free plan caps at 10 ms): the sum over its threads of the time they ran, from
 * /proc/<pid>/task/<tid>/schedstat (nanoseconds; Linux only). D1 runs inside the same process locally, so
 * a reading includes SQLite's own work, which Cloudflare does not bill to the Worker: an upper bound.
 */
import { readdirSync, readFileSync } from "node:fs";

/** The pids of every workerd below this Node process (Miniflare spawns one); none without /proc. */
export function workerdPids(): number[] {
  const children = new Map<number, number[]>();
  const names = new Map<number, string>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  for (const entry of entries) {
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

/** Nanoseconds of CPU the processes have used so far, over all their threads. */
export function cpuNanoseconds(pids: number[]): number {
  let total = 0;
  for (const pid of pids) {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        // The thread ended while we looked; the median over repetitions absorbs the loss.
      }
    }
  }
  return total;
}
