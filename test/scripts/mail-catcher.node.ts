/**
 * `npm run dev`'s choice about mail on a taken port (scripts/mail-catcher.ts, planMailCatcher), on Node
 * (`node --test`, run by `npm test` after vitest): against our real catcher and fake servers of other kinds.
 */
import assert from "node:assert/strict";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { after, describe, test } from "node:test";
import { planMailCatcher, startMailCatcher } from "../../scripts/mail-catcher.ts";

const HOST = "127.0.0.1";
const closers: Array<() => Promise<void>> = [];
after(() => Promise.all(closers.map((close) => close())));

/** A TCP server on a free loopback port that does `onConnection` with each connection. */
async function fakeServer(onConnection: (socket: Socket) => void): Promise<number> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  closers.push(
    () => new Promise((resolve) => (sockets.forEach((socket) => socket.destroy()), server.close(() => resolve()))),
  );
  return (server.address() as AddressInfo).port;
}

/** A port that was free a moment ago. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("planMailCatcher: what npm run dev does about mail on SMTP_PORT", () => {
  test("starts our catcher on a free port", async () => {
    assert.deepEqual(await planMailCatcher(HOST, await freePort()), { start: true });
  });

  test("refuses when the port is another npm run dev's catcher, which would get this worker's mail", async () => {
    const port = await freePort();
    const catcher = await startMailCatcher(HOST, port);
    assert.ok(catcher);
    closers.push(() => catcher.close());
    assert.deepEqual(await planMailCatcher(HOST, port), {
      refuse: [
        `the mail catcher's port ${port} (SMTP_PORT in .dev.vars) is in use by the catcher of another \`npm run dev\`,`,
        "which would receive this worker's mail. Stop it, or set another SMTP_PORT in .dev.vars.",
      ],
    });
  });

  test("uses the developer's own mail server (here one greeting as Mailpit does), and hangs up politely", async () => {
    const commands: string[] = [];
    const port = await fakeServer((socket) => {
      socket.write("220 devbox Mailpit ESMTP Service ready\r\n");
      socket.setEncoding("utf8").on("data", (chunk: string) => commands.push(chunk));
    });
    assert.deepEqual(await planMailCatcher(HOST, port), { useRunning: "220 devbox Mailpit ESMTP Service ready" });
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(commands, ["QUIT\r\n"]);
  });

  test("uses a server whose greeting spans several lines (220-…)", async () => {
    const port = await fakeServer((socket) => socket.write("220-smtp4dev ready\r\n220 welcome\r\n"));
    assert.deepEqual(await planMailCatcher(HOST, port), { useRunning: "220-smtp4dev ready" });
  });

  test("refuses a port whose listener says nothing: not a mail server", async () => {
    const port = await fakeServer(() => {});
    assert.deepEqual(await planMailCatcher(HOST, port, 300), {
      refuse: [
        `port ${port} on ${HOST} (SMTP_PORT in .dev.vars) is in use by something that does not greet as a mail server.`,
        "Stop it, or set another SMTP_PORT in .dev.vars.",
      ],
    });
  });

  test("refuses a port whose listener greets as something else, and quotes it", async () => {
    const port = await fakeServer((socket) => socket.end("+OK POP3 server ready\r\n"));
    assert.deepEqual(await planMailCatcher(HOST, port), {
      refuse: [
        `port ${port} on ${HOST} (SMTP_PORT in .dev.vars) is in use by something that does not greet as a mail server ("+OK POP3 server ready").`,
        "Stop it, or set another SMTP_PORT in .dev.vars.",
      ],
    });
  });
});
