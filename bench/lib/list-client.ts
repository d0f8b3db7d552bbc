/**
 * Clients that list every note without pause, on a thread of their own: the lists of the read-during-list
 * scenario. Hundreds of MiB a second arriving on the bench's own event loop would delay autocannon's
 * timing of the reads measured meanwhile, and in production the client listing notes is not on the
 * reader's machine. The thread reports each list that completed (`{ ms }`) or failed (`{ status }`);
 * posting "stop" ends the lists and then the thread.
 */
import { parentPort, Worker, workerData } from "node:worker_threads";
import { closeConnections, download } from "./load.ts";

interface ListClientData {
  base: string;
  lists: number;
}

export type ListReport = { ms: number } | { status: number };

/** Starts `lists` clients listing `base`/notes on a new thread; `onReport` hears of each list. */
export function startListClients(base: string, lists: number, onReport: (report: ListReport) => void): { stop(): Promise<void> } {
  const thread = new Worker(new URL(import.meta.url), { workerData: { base, lists } satisfies ListClientData });
  thread.on("message", onReport);
  const exited = new Promise<void>((resolve, reject) => {
    thread.on("error", reject);
    thread.on("exit", () => resolve());
  });
  return {
    stop() {
      thread.postMessage("stop");
      return exited;
    },
  };
}

async function listUntilStopped({ base, lists }: ListClientData): Promise<void> {
  const stop = new AbortController();
  parentPort!.on("message", () => stop.abort());
  await Promise.all(
    Array.from({ length: lists }, async () => {
      while (!stop.signal.aborted) {
        const answer = await download(base, "/notes", 600_000, stop.signal);
        if (stop.signal.aborted) break;
        parentPort!.postMessage((answer.status === 200 ? { ms: answer.ms } : { status: answer.status }) satisfies ListReport);
      }
    }),
  );
  closeConnections();
  parentPort!.close();
}

if (parentPort && workerData) await listUntilStopped(workerData as ListClientData);
