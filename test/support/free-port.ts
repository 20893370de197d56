// A loopback port free at the moment of asking, for child processes that must be told a port
// in advance (SVC_METRICS_PORT=0 turns metrics off, so it cannot be left to the kernel).
// Prefer PORT=0 and reading the address back wherever the process reports it: a port picked
// here can in principle be taken by someone else before the child binds it.
import { createServer, type AddressInfo } from 'node:net';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
