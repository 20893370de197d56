import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/** A loopback TCP proxy that can cut its clients off, as a network partition would. */
export interface TcpProxy {
  url: string;
  /** Drops every open connection and refuses new ones. */
  cut(): Promise<void>;
  close(): Promise<void>;
}

/** Forwards 127.0.0.1:<ephemeral> to 127.0.0.1:`targetPort`. */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
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
  return { url: `http://127.0.0.1:${port}`, cut, close: cut };
}
