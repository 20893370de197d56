// The feature floor: a plain Node implementation of what issue 16 requires on
// every request — fastify + undici, the presented key's HMAC, the request log line, metrics, the
// audit record appended durably to a Redis stream, and a writer moving the stream to
// PostgreSQL — written from scratch with none of the gateway's code, on the same libraries.
// FLOOR_LEVEL (1–6) switches the features on one at
// a time, in the order below, so each one's own cost can be read from the run (bench/floor/run.ts).
//
// What it leaves out, and the gateway does not: routing over a catalogue, region rules, failover,
// timeouts and cancellation, enforcement look-ups, the audit journal (records re-written when the
// stream loses them), usage and routing headers, error mapping, request validation beyond a
// shape check. It is one straightforward implementation, not a proven minimum (it re-serialises
// the JSON both ways, sends one XADD per request, passes label objects to prom-client).
import { createHmac, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import pg from 'pg';
import pino from 'pino';
import { Counter, Histogram, Registry } from 'prom-client';
import { Pool } from 'undici';

const level = Number(process.env.FLOOR_LEVEL ?? 6);
const on = { auth: level >= 2, log: level >= 3, metrics: level >= 4, audit: level >= 5, writer: level >= 6 };
const upstream = new URL(process.env.UPSTREAM ?? 'http://127.0.0.1:8090');
const pool = new Pool(upstream.origin, { connections: 256, keepAliveTimeout: 30_000 });
const pepper = process.env.FLOOR_PEPPER ?? 'pepper';
const secret = process.env.FLOOR_SECRET ?? '';
const prices = { 'gpt-4o-mini': { input: 0.15e-6, output: 0.6e-6 } };

// Level 2: keys by the HMAC of their secret, as the gateway stores them (never the secret).
const keys = new Map([[createHmac('sha256', pepper).update(secret).digest('hex'), { id: 'key_floor', payerId: null }]]);

// Level 3: one info line per request, asynchronous writes to stdout in 4 KiB chunks (as the gateway's logger).
const log = pino({ level: 'info' }, pino.destination({ dest: 1, sync: false, minLength: 4096 }));

// Level 4: the gateway's series, one increment or observation per series per request.
const registry = new Registry();
const metric = {
  requests: new Counter({
    name: 'floor_requests_total',
    help: 'requests',
    labelNames: ['interface', 'model', 'supplier', 'region', 'status', 'code'],
    registers: [registry],
  }),
  duration: new Histogram({ name: 'floor_request_seconds', help: 'duration', labelNames: ['interface', 'model'], registers: [registry] }),
  upstream: new Histogram({
    name: 'floor_upstream_seconds',
    help: 'upstream',
    labelNames: ['supplier', 'region', 'outcome'],
    registers: [registry],
  }),
  attempts: new Counter({
    name: 'floor_upstream_attempts_total',
    help: 'attempts',
    labelNames: ['supplier', 'region', 'outcome', 'code'],
    registers: [registry],
  }),
  overhead: new Histogram({ name: 'floor_overhead_seconds', help: 'overhead', labelNames: ['interface'], registers: [registry] }),
  tokens: new Counter({
    name: 'floor_tokens_total',
    help: 'tokens',
    labelNames: ['direction', 'model', 'supplier'],
    registers: [registry],
  }),
  cost: new Counter({ name: 'floor_cost_usd_total', help: 'cost', labelNames: ['model', 'supplier'], registers: [registry] }),
};

// Level 5: the record is in the stream before the client has its answer (durable on acceptance).
const redis = on.audit ? new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableAutoPipelining: true }) : undefined;
const stream = `floor-audit-${process.pid}`;

// Request ids unique across processes: the audit table outlives each round, and fastify's default
// ids restart at req-1, which would turn later rounds' inserts into conflicts that write nothing.
const app = Fastify({ logger: false, genReqId: () => randomUUID() });
app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, text, done) => {
  try {
    done(null, JSON.parse(text));
  } catch (error) {
    error.statusCode = 400;
    done(error);
  }
});

if (on.auth) {
  app.addHook('onRequest', async (request, reply) => {
    const match = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '');
    const key = match && keys.get(createHmac('sha256', pepper).update(match[1]).digest('hex'));
    if (!key) return reply.code(401).send({ error: { code: 'invalid_api_key' } });
    request.key = key;
  });
}

app.post('/v1/chat/completions', async (request, reply) => {
  const started = performance.now();
  const body = request.body;
  if (typeof body !== 'object' || body === null || typeof body.model !== 'string' || !Array.isArray(body.messages)) {
    return reply.code(400).send({ error: { code: 'invalid_request' } });
  }
  const price = prices[body.model];
  if (!price) return reply.code(404).send({ error: { code: 'model_not_found' } });
  const upstreamAt = performance.now();
  const response = await pool.request({
    path: '/v1/chat/completions',
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': request.id },
    body: JSON.stringify(body),
  });
  const answer = await response.body.json();
  const upstreamMs = performance.now() - upstreamAt;
  const usage = answer.usage ?? { prompt_tokens: 0, completion_tokens: 0 };
  const costUsd = usage.prompt_tokens * price.input + usage.completion_tokens * price.output;
  if (on.audit) {
    const record = {
      requestId: request.id,
      timestamp: new Date().toISOString(),
      keyId: request.key?.id ?? null,
      model: body.model,
      supplier: 'sim',
      inputTokens: usage.prompt_tokens,
      outputTokens: usage.completion_tokens,
      costUsd,
      latencyMs: Math.round(performance.now() - started),
      status: response.statusCode,
      attempts: [{ supplier: 'sim', outcome: 'ok', latencyMs: Math.round(upstreamMs) }],
    };
    await redis.xadd(stream, '*', 'r', JSON.stringify(record));
  }
  request.usage = usage;
  request.costUsd = costUsd;
  request.upstreamMs = upstreamMs;
  return answer;
});

app.addHook('onResponse', async (request, reply) => {
  if (on.metrics && request.usage) {
    const seconds = reply.elapsedTime / 1000;
    metric.requests.inc({
      interface: 'chat',
      model: 'gpt-4o-mini',
      supplier: 'sim',
      region: 'EU',
      status: String(reply.statusCode),
      code: 'none',
    });
    metric.duration.observe({ interface: 'chat', model: 'gpt-4o-mini' }, seconds);
    metric.upstream.observe({ supplier: 'sim', region: 'EU', outcome: 'ok' }, request.upstreamMs / 1000);
    metric.attempts.inc({ supplier: 'sim', region: 'EU', outcome: 'ok', code: 'none' });
    metric.overhead.observe({ interface: 'chat' }, seconds - request.upstreamMs / 1000);
    metric.tokens.inc({ direction: 'input', model: 'gpt-4o-mini', supplier: 'sim' }, request.usage.prompt_tokens);
    metric.tokens.inc({ direction: 'output', model: 'gpt-4o-mini', supplier: 'sim' }, request.usage.completion_tokens);
    metric.cost.inc({ model: 'gpt-4o-mini', supplier: 'sim' }, request.costUsd);
  }
  if (on.log) {
    log.info(
      {
        request_id: request.id,
        method: request.method,
        path: '/v1/chat/completions',
        status: reply.statusCode,
        key_id: request.key?.id,
        model: 'gpt-4o-mini',
        supplier: 'sim',
        input_tokens: request.usage?.prompt_tokens,
        output_tokens: request.usage?.completion_tokens,
        cost_usd: request.costUsd,
        duration_ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  }
});

// Level 6: the writer — batches of up to 500 from the stream, one INSERT of a JSON document per
// batch, then acknowledged and deleted (what the gateway's audit writer does, minus its rollup).
async function runWriter() {
  const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await db.connect();
  await db.query(`create table if not exists floor_audit (request_id text primary key, timestamp timestamptz, key_id text,
    model text, supplier text, input_tokens int, output_tokens int, cost_usd numeric, latency_ms int, status int, attempts jsonb)`);
  const reader = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  await reader.xgroup('CREATE', stream, 'writers', '0', 'MKSTREAM').catch(() => undefined);
  for (;;) {
    const reply = await reader.xreadgroup('GROUP', 'writers', 'w1', 'COUNT', 500, 'BLOCK', 100, 'STREAMS', stream, '>');
    const entries = reply?.[0]?.[1] ?? [];
    if (entries.length === 0) continue;
    const records = entries.map(([, fields]) => {
      const r = JSON.parse(fields[1]);
      return {
        request_id: r.requestId,
        timestamp: r.timestamp,
        key_id: r.keyId,
        model: r.model,
        supplier: r.supplier,
        input_tokens: r.inputTokens,
        output_tokens: r.outputTokens,
        cost_usd: r.costUsd,
        latency_ms: r.latencyMs,
        status: r.status,
        attempts: r.attempts,
      };
    });
    await db.query('insert into floor_audit select * from json_populate_recordset(null::floor_audit, $1) on conflict do nothing', [
      JSON.stringify(records),
    ]);
    const ids = entries.map(([id]) => id);
    await reader
      .pipeline()
      .xack(stream, 'writers', ...ids)
      .xdel(stream, ...ids)
      .exec();
  }
}
if (on.writer)
  runWriter().catch((error) => {
    console.error('floor writer failed', error);
    process.exit(1);
  });

await app.listen({ port: Number(process.env.PORT ?? 8096), host: '127.0.0.1' });
console.log(`floor proxy (level ${level}) listening on ${process.env.PORT ?? 8096}`);
process.on('SIGTERM', () => {
  void app.close().then(async () => {
    await redis?.del(stream);
    process.exit(0);
  });
});
