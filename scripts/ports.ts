/** Who is on a loopback port, for `npm run dev` (scripts/dev.ts) before it starts anything there. */
import { connect, createServer } from "node:net";

/** Whether something already listens on host:port: we try to listen there ourselves, and let go at once. */
export async function portInUse(host: string, port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => (err.code === "EADDRINUSE" ? resolve(true) : reject(err)));
    server.listen(port, host, () => server.close(() => resolve(false)));
  });
}

/**
 * The first line a server on host:port sends (an SMTP server's greeting, `220 …`), or undefined when it
 * sends none within `timeoutMs`, hangs up or cannot be reached. Says QUIT and hangs up after reading it.
 */
export function firstLine(host: string, port: number, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let received = "";
    let settled = false;
    const done = (line: string | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.removeAllListeners("data");
      if (line !== undefined && !socket.destroyed) socket.end("QUIT\r\n");
      else socket.destroy();
      resolve(line);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      received += chunk;
      const end = received.indexOf("\n");
      if (end >= 0) done(received.slice(0, end).replace(/\r$/, ""));
    });
    socket.on("error", () => done(undefined));
    socket.on("close", () => done(undefined));
  });
}
