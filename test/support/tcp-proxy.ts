import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/** A loopback TCP proxy that can cut its clients off, as a network partition would. */
export interface TcpProxy {
  url: string;
  /** Drops every open connection and refuses new ones. */
  cut(): Promise<void>;
  /**
   * From now on forwards nothing either way, without closing anything: open connections stay
   * open and are read from, new ones are accepted and read from, and no answer ever comes —
   * a black-holed network, where requests hang instead of failing.
   */
  blackHole(): void;
  /**
   * After blackHole(): forwards again. The connections it swallowed are closed (their clients
   * reconnect), as a client that gave up on a silent connection would have closed it anyway.
   */
  heal(): void;
  /** After cut(): accepts and forwards again on the same port, as a healed partition would. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** Forwards 127.0.0.1:<ephemeral> to 127.0.0.1:`targetPort`. */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const upstreams = new Set<Socket>();
  let blackHoled = false;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  };
  const server = createServer((client) => {
    track(client);
    if (blackHoled) {
      client.resume(); // read and discard
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    track(upstream);
    upstreams.add(upstream);
    upstream.on('close', () => upstreams.delete(upstream));
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => {
      if (!blackHoled) return client.destroy();
      // Black-holed: the client is not told that the far side went away, and is still read.
      client.unpipe();
      client.resume();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  const cut = () => {
    closed ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
    return closed;
  };
  const blackHole = () => {
    blackHoled = true;
    for (const upstream of upstreams) upstream.destroy(); // unpipes; the clients keep being read
  };
  const heal = () => {
    if (!blackHoled) return;
    blackHoled = false;
    for (const socket of sockets) socket.destroy();
  };
  let finished = false;
  const restore = async () => {
    if (finished || !closed) return;
    await closed;
    closed = undefined;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  };
  const close = () => {
    finished = true;
    return cut();
  };
  return { url: `http://127.0.0.1:${port}`, cut, blackHole, heal, restore, close };
}
