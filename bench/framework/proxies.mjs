// The two minimal reverse proxies bench/framework/run.ts compares, forwarding every request to
// UPSTREAM unchanged: the stack the gateway is built on (fastify + undici) and the common
// alternative (express + http-proxy). Neither does any gateway work, so the difference is the
// frameworks' own cost. express and http-proxy are not dependencies of this project: they are
// loaded from BENCH_DEPS, a directory where they were installed for the measurement
// (`npm i --prefix <dir> express@5 http-proxy@1`).
import { createRequire } from 'node:module';
import { join } from 'node:path';

const upstream = new URL(process.env.UPSTREAM ?? 'http://127.0.0.1:8090');
const port = Number(process.env.PORT ?? 8096);
const stack = process.argv[2];

async function fastifyUndici() {
  const { default: Fastify } = await import('fastify');
  const { Pool } = await import('undici');
  const pool = new Pool(upstream.origin, { connections: 256, keepAliveTimeout: 30_000 });
  const app = Fastify({ logger: false });
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.post('/*', async (request, reply) => {
    const { statusCode, headers, body } = await pool.request({
      path: request.url,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: request.headers.authorization ?? '' },
      body: request.body,
    });
    reply.code(statusCode).header('content-type', headers['content-type'] ?? 'application/json');
    return reply.send(body);
  });
  await app.listen({ port, host: '127.0.0.1' });
}

async function expressHttpProxy() {
  const deps = process.env.BENCH_DEPS;
  if (!deps) throw new Error('set BENCH_DEPS to a directory with express and http-proxy installed');
  const require = createRequire(join(deps, 'package.json'));
  const express = require('express');
  const httpProxy = require('http-proxy');
  const { Agent } = await import('node:http');
  const proxy = httpProxy.createProxyServer({ target: upstream.origin, agent: new Agent({ keepAlive: true, maxSockets: 256 }) });
  proxy.on('error', (_error, _request, response) => response.writeHead(502).end());
  const app = express();
  app.post('/*path', (request, response) => proxy.web(request, response));
  await new Promise((resolve) => app.listen(port, '127.0.0.1', resolve));
}

await (stack === 'express' ? expressHttpProxy() : fastifyUndici());
console.log(`${stack} proxy listening on ${port}`);
process.on('SIGTERM', () => process.exit(0));
