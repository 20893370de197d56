import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A listening `/metrics` endpoint. */
export interface MetricsServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` for Prometheus on its own port, apart from the API port, so the
 * ingress that exposes the API never exposes metrics. Port 0 listens on an ephemeral port
 * (tests); callers treat "off" themselves.
 */
export async function startMetricsServer(
  registry: { metrics(): Promise<string>; readonly contentType: string },
  options: { host: string; port: number; health?: () => boolean },
): Promise<MetricsServer> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?', 1)[0];
    // The operator has no API port: its liveness probe asks this port (charts/, operator-deployment).
    if (path === '/health' && options.health) {
      const healthy = options.health();
      response.writeHead(healthy ? 200 : 503, { 'content-type': 'text/plain' }).end(healthy ? 'ok\n' : 'unhealthy\n');
      return;
    }
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are served at GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        response.writeHead(200, { 'content-type': registry.contentType });
        response.end(request.method === 'HEAD' ? undefined : text);
      },
      (error: unknown) => {
        response.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics collection failed: ${(error as Error).message}\n`);
      },
    );
  });
  // Scrapes are short; an idle keep-alive connection must not hold shutdown up.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
