// The gateway's /metrics after known traffic: a success, a failover and an enforcement
// refusal. Every counter and histogram must have moved by exactly what happened — no more
// (nothing double-counted), no less. Real PostgreSQL and Redis when DATABASE_URL / REDIS_URL.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';
import { captureLogs } from './log-capture.js';
import { scrape, type Scrape } from './scrape.js';

const model = 'gpt-4o-mini';

interface Answer {
  status: number;
  headers: Headers;
  body: { usage?: { prompt_tokens: number; completion_tokens: number }; error?: { code: string } };
}

async function chat(url: string, key: string, text: string): Promise<Answer> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: text }], max_tokens: 20 }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Answer['body'] };
}

describe('gateway metrics after a success, a failover and a rejection', () => {
  let h: GatewayHarness;
  const logs = captureLogs();
  let before_: Scrape;
  let after_: Scrape;
  const answers: Answer[] = [];

  beforeAll(async () => {
    h = await startGatewayHarness(
      [
        { name: 'sim-a', region: 'EU' },
        { name: 'sim-b', region: 'EU' },
      ],
      // No circuit opens from one failure, so the order of suppliers stays fixed.
      { metrics: true, logger: logs.logger, settings: { SVC_CIRCUIT_FAILURES: '100000' } },
    );
    const plain = await h.createKey();
    const limited = await h.createKey({ rateLimitRpm: 1 });
    before_ = await scrape(h.gateway.metricsUrl!);

    answers.push(await chat(h.gateway.url, plain, 'the success'));
    h.simulators.get('sim-a')!.setFaults({ status: 500, failFirst: 1 });
    answers.push(await chat(h.gateway.url, plain, 'the failover'));
    answers.push(await chat(h.gateway.url, limited, 'within the rate limit'));
    answers.push(await chat(h.gateway.url, limited, 'over the rate limit'));
    after_ = await scrape(h.gateway.metricsUrl!);
  });
  afterAll(async () => {
    await h?.close();
  });

  /** How much a series moved during the traffic. */
  const moved = (name: string, labels: Record<string, string> = {}) => after_.sum(name, labels) - before_.sum(name, labels);

  test('the traffic went as planned', () => {
    assert.deepEqual(
      answers.map((a) => [a.status, a.headers.get('x-svc-supplier'), a.headers.get('x-svc-failover')]),
      [
        [200, 'sim-a', 'false'],
        [200, 'sim-b', 'true'],
        [200, 'sim-a', 'false'],
        [429, null, null],
      ],
      'success, failover, success, refusal',
    );
    assert.equal(answers[3]!.body.error?.code, 'rate_limit_exceeded', 'the refusal is the rate limit');
  });

  test('requests are counted once each, by interface, model, supplier, region, status and code', () => {
    const base = { interface: 'chat.completions', model };
    assert.equal(moved('svc_gateway_requests_total'), 4, 'four requests in all');
    assert.equal(
      moved('svc_gateway_requests_total', { ...base, supplier: 'sim-a', region: 'EU', status: '200', code: 'none' }),
      2,
      'two answered by sim-a',
    );
    assert.equal(
      moved('svc_gateway_requests_total', { ...base, supplier: 'sim-b', region: 'EU', status: '200', code: 'none' }),
      1,
      'the failover answered by sim-b',
    );
    assert.equal(
      moved('svc_gateway_requests_total', { ...base, supplier: 'none', region: 'none', status: '429', code: 'rate_limit_exceeded' }),
      1,
      'the refusal',
    );
    assert.equal(moved('svc_gateway_request_duration_seconds_count', base), 4, 'every request timed once');
    assert.equal(moved('svc_gateway_request_duration_seconds_bucket', { ...base, le: '+Inf' }), 4, 'the +Inf bucket holds them all');
  });

  test('the refusal is a rate-limit rejection and nothing else', () => {
    assert.equal(moved('svc_gateway_rejections_total'), 1, 'one rejection');
    assert.equal(moved('svc_gateway_rejections_total', { reason: 'rate_limit' }), 1, 'for the rate limit');
  });

  test('supplier attempts: three successes, one failure that failed over', () => {
    assert.equal(moved('svc_gateway_upstream_attempts_total'), 4, 'four attempts');
    assert.equal(
      moved('svc_gateway_upstream_attempts_total', { supplier: 'sim-a', region: 'EU', outcome: 'ok', code: 'none' }),
      2,
      'sim-a answered twice',
    );
    assert.equal(
      moved('svc_gateway_upstream_attempts_total', { supplier: 'sim-b', region: 'EU', outcome: 'ok', code: 'none' }),
      1,
      'sim-b once',
    );
    const failed = after_.matching('svc_gateway_upstream_attempts_total', { supplier: 'sim-a', outcome: 'failed' });
    assert.equal(failed.length, 1, 'one failed-attempt series');
    assert.equal(failed[0]!.value, 1, 'one failed attempt');
    const code = failed[0]!.labels.code!;
    assert.notEqual(code, 'none', 'the failure has its code');
    assert.equal(moved('svc_gateway_upstream_duration_seconds_count', { supplier: 'sim-a', outcome: 'ok' }), 2, 'sim-a successes timed');
    assert.equal(moved('svc_gateway_upstream_duration_seconds_count', { supplier: 'sim-a', outcome: 'failed' }), 1, 'the failure timed');
    assert.equal(moved('svc_gateway_upstream_duration_seconds_count', { supplier: 'sim-b', outcome: 'ok' }), 1, 'sim-b timed');
    assert.equal(moved('svc_gateway_failovers_total'), 1, 'one failover');
    assert.equal(moved('svc_gateway_failovers_total', { model, supplier: 'sim-a', code }), 1, 'away from sim-a, with the failure code');
  });

  test('overhead is measured for routed requests only; no stream, no time to first byte', () => {
    assert.equal(moved('svc_gateway_overhead_seconds_count', { interface: 'chat.completions' }), 3, 'the three routed requests');
    assert.equal(moved('svc_gateway_time_to_first_byte_seconds_count'), 0, 'no stream was sent');
    const overheadSum = moved('svc_gateway_overhead_seconds_sum');
    const durationSum = moved('svc_gateway_request_duration_seconds_sum');
    assert.ok(overheadSum >= 0 && overheadSum < durationSum, `overhead (${overheadSum}s) is part of the request time (${durationSum}s)`);
  });

  test('tokens and cost add up to what the answers reported', () => {
    const answered = answers.filter((a) => a.status === 200);
    for (const supplier of ['sim-a', 'sim-b']) {
      const mine = answered.filter((a) => a.headers.get('x-svc-supplier') === supplier);
      const input = mine.reduce((t, a) => t + a.body.usage!.prompt_tokens, 0);
      const output = mine.reduce((t, a) => t + a.body.usage!.completion_tokens, 0);
      assert.ok(input > 0 && output > 0, `${supplier} reported usage`);
      assert.equal(moved('svc_gateway_tokens_total', { direction: 'input', model, supplier }), input, `${supplier} input tokens`);
      assert.equal(moved('svc_gateway_tokens_total', { direction: 'output', model, supplier }), output, `${supplier} output tokens`);
      // Catalogue prices of the harness: 0.15 / 0.60 USD per million tokens.
      const cost = (input * 0.15 + output * 0.6) / 1e6;
      assert.ok(Math.abs(moved('svc_gateway_cost_usd_total', { model, supplier }) - cost) < 1e-12, `${supplier} cost ${cost}`);
    }
  });

  test('gauges: every supplier circuit closed, audit buffer and lag reported', () => {
    for (const supplier of ['sim-a', 'sim-b']) {
      const circuit = after_.matching('svc_gateway_supplier_circuit_open', { supplier, region: 'EU' });
      assert.deepEqual(
        circuit.map((s) => s.value),
        [0],
        `${supplier} circuit closed`,
      );
    }
    assert.equal(after_.matching('svc_gateway_audit_buffer_depth').length, 1, 'buffer depth reported');
    assert.ok(after_.sum('svc_gateway_audit_buffer_depth') >= 0, 'buffer depth is a count');
    assert.ok(after_.sum('svc_gateway_audit_lag_seconds') >= 0, 'lag is a duration');
    assert.equal(moved('svc_store_errors_total'), 0, 'no store command failed');
    assert.equal(moved('svc_db_errors_total'), 0, 'no query failed');
  });

  test('a stream observes its time to first byte once, within the request time', async () => {
    const key = await h.createKey();
    const start = await scrape(h.gateway.metricsUrl!);
    const response = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'stream please' }], max_tokens: 20, stream: true }),
    });
    assert.equal(response.status, 200, 'stream answered');
    assert.match(await response.text(), /data: \[DONE\]/, 'the stream completed');
    const end = await scrape(h.gateway.metricsUrl!);
    const labels = { interface: 'chat.completions', model, supplier: 'sim-a' };
    const count =
      end.sum('svc_gateway_time_to_first_byte_seconds_count', labels) - start.sum('svc_gateway_time_to_first_byte_seconds_count', labels);
    assert.equal(count, 1, 'one first byte observed');
    const ttfb =
      end.sum('svc_gateway_time_to_first_byte_seconds_sum', labels) - start.sum('svc_gateway_time_to_first_byte_seconds_sum', labels);
    const total =
      end.sum('svc_gateway_request_duration_seconds_sum', { interface: 'chat.completions' }) -
      start.sum('svc_gateway_request_duration_seconds_sum', { interface: 'chat.completions' });
    assert.ok(ttfb > 0 && ttfb <= total, `first byte after ${ttfb}s within the request's ${total}s`);
  });

  test('a request its client abandons is counted once, as 499, and its line names the supplier still working on it', async () => {
    const { id, secret: key } = await h.createKeyWithId();
    const start = await scrape(h.gateway.metricsUrl!);
    const suppliers = ['sim-a', 'sim-b'].map((name) => h.simulators.get(name)!);
    const received = () => suppliers.reduce((n, s) => n + s.requests.length, 0);
    const before = received();
    for (const supplier of suppliers) supplier.setFaults({ hang: true });
    try {
      const gone = new AbortController();
      const abandoned = fetch(`${h.gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'never mind' }], max_tokens: 20 }),
        signal: gone.signal,
      });
      // The client leaves while the supplier is working on its request.
      await waitFor('the supplier to get the request', () => received() > before);
      // Begun and not answered: in flight (the gauge autoscaling reads).
      assert.equal((await scrape(h.gateway.metricsUrl!)).sum('svc_gateway_requests_in_flight', {}), 1, 'one request in flight');
      gone.abort();
      await assert.rejects(abandoned, 'the client gave up');
      // The request's audit record is written once the gateway is done with it: nothing of it is counted later.
      await waitFor('the abandoned request in the audit log', async () => (await h.auditOf(id)).length === 1);
    } finally {
      for (const supplier of suppliers) supplier.setFaults(undefined);
    }
    let end = await scrape(h.gateway.metricsUrl!);
    const moved = (labels: Record<string, string>) =>
      end.sum('svc_gateway_requests_total', labels) - start.sum('svc_gateway_requests_total', labels);
    assert.equal(
      moved({ status: '499' }),
      1,
      `counted as 499: ${JSON.stringify(end.matching('svc_gateway_requests_total', {}).filter((x) => x.value > 0))}`,
    );
    // (The audit look-ups above are requests too, of interface "manage".)
    assert.equal(moved({}) - moved({ interface: 'manage' }), 1, 'and only once');
    assert.equal(end.sum('svc_gateway_requests_in_flight', {}), 0, 'nothing in flight once every request ended');
    const line = logs.lines().find((l) => l.msg === 'request' && l.status === 499);
    assert.ok(line, 'a request line for the abandoned request');
    assert.equal(line.in_flight_supplier, 'sim-a', 'it names the supplier the client left waiting');
    assert.equal(line.attempts, undefined, 'no attempt had ended when the client left');
    // Its attempt is counted once the pipeline has recorded it, as its audit record has it (it was never counted).
    const attempts = () => end.sum('svc_gateway_upstream_attempts_total', { code: 'client_closed_request' });
    await waitFor('the cancelled attempt in the metrics', async () => {
      end = await scrape(h.gateway.metricsUrl!);
      return attempts() - start.sum('svc_gateway_upstream_attempts_total', { code: 'client_closed_request' }) >= 1;
    });
    assert.equal(
      end.sum('svc_gateway_upstream_attempts_total', { supplier: 'sim-a', outcome: 'failed', code: 'client_closed_request' }) -
        start.sum('svc_gateway_upstream_attempts_total', { supplier: 'sim-a', outcome: 'failed', code: 'client_closed_request' }),
      1,
      'one attempt, cancelled for the client',
    );
  });

  test('metrics are not served on the API port', async () => {
    const response = await fetch(`${h.gateway.url}/metrics`, { headers: { authorization: `Bearer ${h.adminKey}` } });
    assert.equal(response.status, 404, 'the ingress-facing port has no /metrics, even for the admin');
    assert.ok(!(await response.text()).includes('svc_gateway_'), 'no metric text leaks');
  });
});

describe('a request every supplier failed', () => {
  test('its error body, request line, metrics and audit record name the same supplier: the one whose failure the client got', async () => {
    const logs = captureLogs();
    const h = await startGatewayHarness(
      [
        { name: 'sim-a', region: 'EU' },
        { name: 'sim-b', region: 'EU' },
      ],
      { metrics: true, logger: logs.logger, settings: { SVC_CIRCUIT_FAILURES: '100000' } },
    );
    try {
      const key = await h.createKeyWithId();
      h.simulators.get('sim-a')!.setFaults({ status: 500 });
      h.simulators.get('sim-b')!.setFaults({ status: 503 });
      const answer = await chat(h.gateway.url, key.secret, 'nobody answers');
      assert.equal(answer.status, 500, 'the primary failure is answered');
      const details = (answer.body.error as { details?: { supplier?: string } } | undefined)?.details;
      assert.equal(details?.supplier, 'sim-a');
      await waitFor('the request line', () => logs.lines().some((l) => l.msg === 'request' && l.status === 500));
      const line = logs.lines().find((l) => l.msg === 'request' && l.status === 500)!;
      assert.equal(line.supplier, 'sim-a', 'the request line');
      assert.equal(line.code, answer.body.error?.code, 'the request line carries the code the client got');
      const metrics = await scrape(h.gateway.metricsUrl!);
      assert.equal(metrics.sum('svc_gateway_requests_total', { supplier: 'sim-a', status: '500' }), 1, 'the metrics');
      assert.equal(metrics.sum('svc_gateway_requests_total', { supplier: 'sim-b' }), 0);
      const auditRows = async () =>
        (
          (await (
            await fetch(`${h.gateway.url}/v1/manage/keys/${key.id}/audit`, { headers: { authorization: `Bearer ${h.adminKey}` } })
          ).json()) as { data: { supplier: string | null }[] }
        ).data;
      await waitFor('the audit record', async () => (await auditRows()).length === 1);
      assert.equal((await auditRows())[0]!.supplier, 'sim-a', 'the audit record');
    } finally {
      await h.close();
    }
  });
});
