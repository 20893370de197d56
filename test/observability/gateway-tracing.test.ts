// Traces, logs and secrets end to end: a gateway with an in-memory span exporter serves a
// request whose first supplier fails. The spans must form the tree server → attempt,
// attempt (GenAI attributes, supplier, region, failover), each supplier must have been told
// its attempt's span through `traceparent`, and the request's log line must carry the trace
// id. No key secret may appear in logs, metrics or spans.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createTestDatabase } from '../../core/db/testing.js';
import type { Database } from '../../core/db/index.js';
import { startTracing, type Tracing } from '../../core/telemetry/index.js';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { captureLogs, type CapturedLogs } from './log-capture.js';

const model = 'gpt-4o-mini';
// The test process's one SDK, exporting into memory (the gateway would read OTEL_* instead).
const exporter = new InMemorySpanExporter();
const tracing: Tracing = startTracing({ serviceName: 'svc-gateway', spanProcessors: [new SimpleSpanProcessor(exporter)] });

async function chat(url: string, key: string, text: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: text }], max_tokens: 20 }),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as { usage?: { prompt_tokens: number; completion_tokens: number } },
  };
}

/** Spans of one trace, after the processors have exported everything. */
async function spansOf(traceId: string): Promise<ReadableSpan[]> {
  await tracing.forceFlush();
  return exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
}

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.close();
  await tracing.shutdown();
});

describe('tracing a failover request', () => {
  let h: GatewayHarness;
  let logs: CapturedLogs;
  let secret: string;
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  const clientSpanId = 'b7ad6b7169203331';
  const prompt = 'a question nobody else asks 7c1e';
  let answer: Awaited<ReturnType<typeof chat>>;

  beforeAll(async () => {
    logs = captureLogs();
    h = await startGatewayHarness(
      [
        { name: 'sim-a', region: 'EU' },
        { name: 'sim-b', region: 'EU', protocol: 'anthropic' },
      ],
      { database, tracing, logger: logs.logger, metrics: true, settings: { SVC_CIRCUIT_FAILURES: '100000' } },
    );
    secret = await h.createKey();
    h.simulators.get('sim-a')!.setFaults({ status: 500, failFirst: 1 });
    answer = await chat(h.gateway.url, secret, prompt, { traceparent: `00-${traceId}-${clientSpanId}-01` });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('one server span continuing the client trace, two attempt spans under it', async () => {
    assert.equal(answer.status, 200, 'the failover answered');
    assert.equal(answer.headers.get('x-svc-supplier'), 'sim-b', 'sim-b answered');
    const spans = await spansOf(traceId);
    const servers = spans.filter((s) => s.kind === SpanKind.SERVER);
    assert.equal(servers.length, 1, 'one server span');
    const server = servers[0]!;
    assert.equal(server.name, 'POST /v1/chat/completions', 'named by method and route');
    assert.equal(server.parentSpanContext?.spanId, clientSpanId, "the client's span is its parent");
    const attempts = spans
      .filter((s) => s.kind === SpanKind.CLIENT)
      .sort((a, b) => Number(a.attributes['svc.attempt']) - Number(b.attributes['svc.attempt']));
    assert.equal(attempts.length, 2, 'one client span per attempt');
    for (const attempt of attempts) {
      assert.equal(attempt.parentSpanContext?.spanId, server.spanContext().spanId, 'attempts are children of the server span');
      assert.equal(attempt.name, `chat ${model}`, 'GenAI span name: operation and model');
    }
    assert.equal(spans.length, 3, 'nothing else in the trace');

    const [first, second] = attempts as [ReadableSpan, ReadableSpan];
    assert.deepEqual(
      pick(first.attributes, [
        'gen_ai.operation.name',
        'gen_ai.provider.name',
        'gen_ai.system',
        'gen_ai.request.model',
        'svc.supplier',
        'svc.region',
        'svc.failover',
        'http.response.status_code',
      ]),
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.system': 'openai',
        'gen_ai.request.model': model,
        'svc.supplier': 'sim-a',
        'svc.region': 'EU',
        'svc.failover': false,
        'http.response.status_code': 500,
      },
      'the failed first attempt',
    );
    assert.equal(first.status.code, SpanStatusCode.ERROR, 'the failed attempt is an error');
    assert.ok(typeof first.attributes['error.type'] === 'string', 'with its error code');
    assert.equal(first.attributes['gen_ai.usage.input_tokens'], undefined, 'a failed attempt used no tokens');
    assert.deepEqual(
      pick(second.attributes, [
        'gen_ai.operation.name',
        'gen_ai.provider.name',
        'gen_ai.request.model',
        'gen_ai.response.model',
        'gen_ai.usage.input_tokens',
        'gen_ai.usage.output_tokens',
        'svc.supplier',
        'svc.region',
        'svc.failover',
      ]),
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'anthropic',
        'gen_ai.request.model': model,
        'gen_ai.response.model': model,
        'gen_ai.usage.input_tokens': answer.body.usage!.prompt_tokens,
        'gen_ai.usage.output_tokens': answer.body.usage!.completion_tokens,
        'svc.supplier': 'sim-b',
        'svc.region': 'EU',
        'svc.failover': true,
      },
      'the answering failover attempt',
    );
    assert.notEqual(second.status.code, SpanStatusCode.ERROR, 'the answering attempt is no error');
    assert.deepEqual(
      pick(server.attributes, [
        'http.request.method',
        'http.route',
        'http.response.status_code',
        'svc.interface',
        'svc.model',
        'svc.supplier',
        'svc.failover',
        'gen_ai.usage.input_tokens',
      ]),
      {
        'http.request.method': 'POST',
        'http.route': '/v1/chat/completions',
        'http.response.status_code': 200,
        'svc.interface': 'chat.completions',
        'svc.model': model,
        'svc.supplier': 'sim-b',
        'svc.failover': true,
        'gen_ai.usage.input_tokens': answer.body.usage!.prompt_tokens,
      },
      'the server span sums the request up',
    );
  });

  test('each supplier received its attempt span as traceparent', async () => {
    const spans = await spansOf(traceId);
    const bySupplier = new Map(
      spans.filter((s) => s.kind === SpanKind.CLIENT).map((s) => [String(s.attributes['svc.supplier']), s.spanContext().spanId]),
    );
    for (const supplier of ['sim-a', 'sim-b']) {
      const received = h.simulators
        .get(supplier)!
        .requests.filter((r) => r.path.startsWith('/v1/'))
        .at(-1);
      assert.equal(received?.headers.traceparent, `00-${traceId}-${bySupplier.get(supplier)}-01`, `${supplier} got its span's traceparent`);
    }
  });

  test("the request's log line carries its request id and trace id, and no prompt text", () => {
    const line = logs.lines().find((l) => l.msg === 'request' && l.request_id === answer.headers.get('x-request-id'));
    assert.ok(line, 'the request was logged');
    assert.equal(line.trace_id, traceId, 'with the trace id');
    assert.equal(line.failover, true, 'and the routing facts');
    assert.ok(!logs.text().includes(prompt), 'prompt text is not logged by default');
  });

  test('no key secret in logs, metrics or spans, not even a wrong one a client sent', async () => {
    const wrong = `${secret.slice(0, -6)}zzzzzz`;
    const refused = await fetch(`${h.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': wrong, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(refused.status, 401, 'the wrong key is refused');
    await refused.text();
    await chat(h.gateway.url, h.adminKey, 'the admin key does not call models');
    const metrics = await (await fetch(h.gateway.metricsUrl!)).text();
    await tracing.forceFlush();
    const spans = JSON.stringify(
      exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })),
    );
    const secrets = { 'the key': secret, 'the wrong key': wrong, 'the admin key': h.adminKey, 'the pepper': h.pepper };
    for (const [what, value] of Object.entries(secrets)) {
      for (const [where, text] of Object.entries({ logs: logs.text(), metrics, spans })) {
        assert.ok(!text.includes(value), `${what} must not appear in ${where}`);
      }
    }
    assert.ok(spans.includes('POST /v1/messages'), 'the refused request was traced too');
  });
});

describe('prompt logging and tracing switches', () => {
  test('SVC_LOG_PROMPTS=true puts the prompt in the request line', async () => {
    const logs = captureLogs({ logPromptContent: true });
    const h = await startGatewayHarness(undefined, { database, logger: logs.logger, settings: { SVC_LOG_PROMPTS: 'true' } });
    try {
      const secret = await h.createKey();
      assert.equal((await chat(h.gateway.url, secret, 'please log this prompt 93be')).status, 200, 'answered');
      const line = logs.lines().find((l) => l.msg === 'request');
      assert.match(JSON.stringify(line?.prompt), /please log this prompt 93be/, 'the prompt is in the line');
      assert.ok(!logs.text().includes(secret), 'the key still is not');
    } finally {
      await h.close();
    }
  });

  test('a gateway without tracing creates no span', async () => {
    await tracing.forceFlush();
    const before = exporter.getFinishedSpans().length;
    const logs = captureLogs();
    const h = await startGatewayHarness(undefined, { database, logger: logs.logger });
    try {
      const secret = await h.createKey();
      assert.equal((await chat(h.gateway.url, secret, 'untraced')).status, 200, 'answered');
      await tracing.forceFlush();
      assert.equal(exporter.getFinishedSpans().length, before, 'no span was recorded');
      assert.equal(logs.lines().find((l) => l.msg === 'request')?.trace_id, undefined, 'no trace id in the line');
      assert.equal(h.simulators.get('sim-eu')!.requests.at(-1)?.headers.traceparent, undefined, 'no traceparent to the supplier');
    } finally {
      await h.close();
    }
  });
});

function pick(attributes: ReadableSpan['attributes'], keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.map((k) => [k, attributes[k]]));
}
