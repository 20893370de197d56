// A client that leaves before its answer (here after 500 ms, the supplier taking 2 s) is a 499
// "client closed request" wherever the request is recorded: the request line and the metrics said
// so, while the audit record called it a client error (400 request_rejected).
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';
import { captureLogs } from '../observability/log-capture.js';

describe('a client that aborts before the answer', () => {
  let h: GatewayHarness;
  const logs = captureLogs();
  beforeAll(async () => {
    h = await startGatewayHarness([{ name: 'sim-a', region: 'EU' }], { logger: logs.logger });
    h.simulators.get('sim-a')!.setFaults({ latencyMs: 2000 });
  });
  afterAll(async () => {
    await h?.close();
  });

  for (const stream of [false, true]) {
    test(`${stream ? 'streaming' : 'JSON'}: the audit record says 499 client_closed_request, as the request line does`, async () => {
      const { id, secret } = await h.createKeyWithId();
      const gone = new AbortController();
      const pending = fetch(`${h.gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'never mind' }], max_tokens: 20, stream }),
        signal: gone.signal,
      });
      setTimeout(() => gone.abort(), 500);
      await assert.rejects(pending, 'the client gave up');
      await waitFor('the abandoned request in the audit log', async () => (await h.auditOf(id)).length === 1);
      const [record] = await h.auditOf(id);
      const line = logs.lines().find((l) => l.msg === 'request' && l.request_id === record!.request_id);
      assert.equal(line?.status, 499, 'the request line says 499');
      assert.deepEqual({ status: record!.status, code: record!.code }, { status: 499, code: 'client_closed_request' });
      assert.equal(line.code, 'client_closed_request', 'the request line names it the same way');
      // The supplier attempt was cancelled for the client, not refused by the supplier (it read 400 request_rejected).
      assert.deepEqual(
        record!.attempts.map((a) => ({ outcome: a.outcome, status: a.status, code: a.code })),
        [{ outcome: 'failed', status: 499, code: 'client_closed_request' }],
      );
    });
  }
});
