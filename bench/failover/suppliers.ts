// Minimal OpenAI-protocol suppliers for the failover benchmark: a node:http server per supplier
// that either answers a fixed chat completion or fails at once (503, or 429 with a chosen
// Retry-After), and records, per gateway request id (the `x-request-id` the gateway sends
// upstream), when the request arrived and when the failure response was fully handed to the
// socket. They run in the benchmark's own process, so their `performance.now()` shares the
// gateway's clock and the gap between a primary's failure and the secondary's request can be
// measured from outside the gateway as well.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What a supplier does with the next requests. */
export type SupplierMode = { kind: 'ok' } | { kind: 'status'; status: 503 } | { kind: 'status'; status: 429; retryAfterSeconds: number };

/** Timestamps of one request, `performance.now()` of this process. */
export interface SupplierTiming {
  /** The request's headers were parsed (node:http 'request' event). */
  receivedAt: number;
  /** The whole response was handed to the socket ('finish'). */
  finishedAt: number | undefined;
}

export interface BenchSupplier {
  name: string;
  /** Base URL with `/v1`, for the catalogue. */
  url: string;
  mode: SupplierMode;
  /** Gateway request id → timing; cleared by the caller between scenarios. */
  timings: Map<string, SupplierTiming>;
  close(): Promise<void>;
}

const completion = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 0,
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Failover benchmark answer.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 },
});

const errorBodies = {
  503: JSON.stringify({
    error: { message: 'The engine is currently overloaded, please try again later (bench)', type: 'server_error', param: null, code: null },
  }),
  429: JSON.stringify({
    error: { message: 'Rate limit reached for requests (bench)', type: 'requests', param: null, code: 'rate_limit_exceeded' },
  }),
};

/** Starts one supplier on an ephemeral port. */
export async function startBenchSupplier(name: string, mode: SupplierMode): Promise<BenchSupplier> {
  const sockets = new Set<Socket>();
  const supplier: BenchSupplier = { name, url: '', mode, timings: new Map(), close: async () => undefined };
  const server = createServer({ noDelay: true }, (req: IncomingMessage, res: ServerResponse) => {
    const receivedAt = performance.now();
    const id = String(req.headers['x-request-id'] ?? '');
    const timing: SupplierTiming = { receivedAt, finishedAt: undefined };
    supplier.timings.set(id, timing);
    res.once('finish', () => (timing.finishedAt = performance.now()));
    req.resume();
    req.once('end', () => {
      const current = supplier.mode;
      if (current.kind === 'ok') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(completion) }).end(completion);
        return;
      }
      const body = errorBodies[current.status];
      const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
      if (current.status === 429) headers['retry-after'] = String(current.retryAfterSeconds);
      res.writeHead(current.status, headers).end(body);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  supplier.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  supplier.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
  return supplier;
}
