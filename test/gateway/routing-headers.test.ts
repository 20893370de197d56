// The routing headers' timing and failover facts (docs/routing.md "Routing headers"):
// x-svc-latency-ms is the request's whole time in the gateway up to the headers (earlier failed
// attempts included), x-svc-attempt-latency-ms the answering attempt alone, and x-svc-failover is
// true whenever the answering supplier is not the first-ranked one — after a failed attempt or
// because the preferred supplier's circuit was open and it was skipped.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { RunningSimulator } from '../simulator/server.js';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';

const model = 'gpt-4o-mini';

describe('routing headers: latency and failover', () => {
  let h: GatewayHarness;
  let key: string;
  let keyId: string;
  let primary: RunningSimulator;
  let secondary: RunningSimulator;

  beforeAll(async () => {
    h = await startGatewayHarness(
      [
        { name: 'primary-eu', region: 'EU', priority: 1 },
        { name: 'secondary-eu', region: 'EU', priority: 2 },
      ],
      // Only a 429 with Retry-After opens a circuit in this file.
      { settings: { SVC_CIRCUIT_FAILURES: '100000' } },
    );
    // Through the Management API, so the key's audit log can be read back by id.
    const created = await fetch(`${h.gateway.url}/v1/manage/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'routing-headers' }),
    });
    ({ id: keyId, key } = (await created.json()) as { id: string; key: string });
    primary = h.simulators.get('primary-eu')!;
    secondary = h.simulators.get('secondary-eu')!;
  });
  afterAll(async () => {
    await h?.close();
  });

  const post = (body: Record<string, unknown>) =>
    fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: `hello ${Math.random()}` }], ...body }),
    });
  const timing = (res: Response) => ({
    latency: Number(res.headers.get('x-svc-latency-ms')),
    attempt: Number(res.headers.get('x-svc-attempt-latency-ms')),
  });

  test('a direct answer: failover false, the attempt is part of the request latency', async () => {
    const res = await post({});
    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-supplier')).toBe('primary-eu');
    expect(res.headers.get('x-svc-failover')).toBe('false');
    expect(res.headers.get('x-svc-latency-ms')).toMatch(/^\d+$/);
    expect(res.headers.get('x-svc-attempt-latency-ms')).toMatch(/^\d+$/);
    const { latency, attempt } = timing(res);
    expect(Number.isInteger(latency)).toBe(true);
    expect(Number.isInteger(attempt)).toBe(true);
    expect(latency).toBeGreaterThanOrEqual(attempt);
  });

  test('after a slow failed attempt, x-svc-latency-ms includes it and x-svc-attempt-latency-ms does not (JSON and stream)', async () => {
    const delayMs = 300;
    for (const stream of [false, true]) {
      primary.setFaults({ status: 503, latencyMs: delayMs });
      const res = await post(stream ? { stream: true } : {});
      expect(res.status).toBe(200);
      await res.text();
      expect(res.headers.get('x-svc-supplier')).toBe('secondary-eu');
      expect(res.headers.get('x-svc-failover')).toBe('true');
      const { latency, attempt } = timing(res);
      expect(latency).toBeGreaterThanOrEqual(delayMs);
      // The failed primary's delay lies between the request's start and the answering attempt's.
      expect(latency - attempt).toBeGreaterThanOrEqual(delayMs - 1);
    }
    primary.setFaults(undefined);
  });

  test('a primary skipped for its open circuit is reported as a failover', async () => {
    primary.setFaults({ status: 429, retryAfterSeconds: 60, failFirst: 1 });
    const limited = await post({});
    expect(limited.headers.get('x-svc-supplier')).toBe('secondary-eu');
    expect(limited.headers.get('x-svc-failover')).toBe('true');
    const triedBefore = primary.requests.length;
    const skipped = await post({});
    expect(skipped.status).toBe(200);
    expect(primary.requests.length, 'the primary is not tried while its circuit is open').toBe(triedBefore);
    expect(skipped.headers.get('x-svc-supplier')).toBe('secondary-eu');
    expect(skipped.headers.get('x-svc-failover')).toBe('true');
    expect(secondary.requests.length).toBeGreaterThan(0);

    // The audit record follows the same rule: one attempt, on the secondary, and a failover.
    const requestId = skipped.headers.get('x-request-id');
    let row: { failover: boolean; supplier: string; attempts: unknown[] } | undefined;
    await waitFor('the skipped request in the audit log', async () => {
      const res = await fetch(`${h.gateway.url}/v1/manage/keys/${keyId}/audit?limit=50`, {
        headers: { authorization: `Bearer ${h.adminKey}` },
      });
      const page = (await res.json()) as { data: { request_id: string; failover: boolean; supplier: string; attempts: unknown[] }[] };
      row = page.data.find((r) => r.request_id === requestId);
      return row !== undefined;
    });
    expect(row).toMatchObject({ supplier: 'secondary-eu', failover: true });
    expect(row!.attempts).toHaveLength(1);
  });
});
