// A key's budget period changed through the Management API while its requests are in flight (an
// outside probe flipped it four times under concurrent slow requests and spent 2.46× a daily
// budget): the new period's counter counts those requests from the moment it is rebuilt, so the
// key is refused at its limit, and ends counting each request's actual cost once.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RunningGateway } from '../../gateway/src/server.js';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';

/** Requests the supplier holds until the test lets them go. */
const held: (() => void)[] = [];
let server: Server;
let harness: GatewayHarness;
let replica: RunningGateway;

const answer = {
  id: 'chatcmpl-held',
  object: 'chat.completion',
  created: 1,
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'late' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
};

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    req.resume();
    req.on('end', () =>
      held.push(() => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(answer));
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  harness = await startGatewayHarness([
    {
      name: 'held',
      region: 'EU',
      baseUrl: url,
      timeout_ms: 60_000,
      models: [{ id: 'gpt-4o-mini', input_usd_per_mtok: 1_000, output_usd_per_mtok: 1_000 }],
    },
  ]);
  replica = await harness.startReplica();
});

afterAll(async () => {
  for (const release of held.splice(0)) release();
  await harness?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], max_tokens: 20 });

function chat(secret: string, gateway = harness.gateway.url): Promise<Response> {
  return fetch(`${gateway}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body,
  });
}

async function manage(method: string, path: string, payload?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${harness.gateway.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${harness.adminKey}` },
    ...(payload !== undefined && { body: JSON.stringify(payload) }),
  });
  expect(res.status, `${method} ${path}`).toBeLessThan(300);
  return (await res.json()) as Record<string, unknown>;
}

/** The worst case of one request (its body's bytes and 20 output tokens at 1,000 USD per million) and a budget of five. */
const worstCase = ((Buffer.byteLength(body) + 20) * 1_000) / 1e6;
const fiveRequests = Math.round(worstCase * 5 * 1e6) / 1e6 + 1e-6;

/** Waits until the next request's answer (402 expected) or, wrongly, its admission (the supplier holds it). */
async function nextRefused(secret: string, gateway: string): Promise<void> {
  const before = held.length;
  let reply: Response | undefined;
  void chat(secret, gateway).then((r) => (reply = r));
  await waitFor('the request answered (or admitted)', () => reply !== undefined || held.length > before);
  expect(held.length, 'the request was admitted: the requests in flight were not counted').toBe(before);
  await waitFor('the request answered', () => reply !== undefined);
  expect(reply!.status, await reply!.clone().text()).toBe(402);
  expect(((await reply!.json()) as { error: { code: string } }).error.code).toBe('budget_exceeded');
}

test('two replicas: a period changed with requests in flight on one, the other refuses at the limit', async () => {
  const created = await manage('POST', '/v1/manage/keys', {
    name: 'period-flip-replicas',
    budget_limit: fiveRequests,
    budget_period: 'daily',
  });
  const secret = created.key as string;
  const id = created.id as string;
  const early = Array.from({ length: 4 }, () => chat(secret));
  await waitFor('four requests held by the supplier', () => held.length === 4);
  await manage('PATCH', `/v1/manage/keys/${id}`, { budget_period: 'monthly' });
  // The first gateway hears of the change and carries its four requests into the new counter.
  await waitFor('the new counter to count the four requests in flight', async () => {
    const view = await manage('GET', `/v1/manage/keys/${id}`);
    return Math.abs((view.budget_reserved as number) - 4 * worstCase) < 1e-6;
  });
  const fifth = chat(secret, replica.url);
  await waitFor('the fifth request held by the supplier', () => held.length === 5);
  await nextRefused(secret, replica.url);
  for (const release of held.splice(0)) release();
  for (const reply of await Promise.all([...early, fifth])) expect(reply.status).toBe(200);
  await waitFor('the key to show the five requests at their actual cost, nothing reserved', async () => {
    const view = await manage('GET', `/v1/manage/keys/${id}`);
    return Math.abs((view.budget_used as number) - 5 * 0.02) < 1e-9 && view.budget_reserved === 0;
  });
});

test('a period changed with requests in flight: they still count against the limit, then at their actual cost', async () => {
  const created = await manage('POST', '/v1/manage/keys', { name: 'period-flip', budget_limit: fiveRequests, budget_period: 'daily' });
  const secret = created.key as string;
  const id = created.id as string;
  const early = Array.from({ length: 4 }, () => chat(secret));
  await waitFor('four requests held by the supplier', () => held.length === 4);
  const patched = await manage('PATCH', `/v1/manage/keys/${id}`, { budget_period: 'monthly' });
  // The gateway that made the change carried its four requests in flight into the monthly counter before answering.
  expect(patched.budget_reserved as number).toBeCloseTo(4 * worstCase, 9);
  const fifth = chat(secret);
  await waitFor('the fifth request held by the supplier', () => held.length === 5);
  await nextRefused(secret, harness.gateway.url);
  for (const release of held.splice(0)) release();
  const replies = await Promise.all([...early, fifth]);
  let spent = 0;
  for (const reply of replies) {
    expect(reply.status).toBe(200);
    spent += Number(reply.headers.get('x-svc-cost-usd'));
  }
  expect(spent).toBeCloseTo(5 * 0.02, 9);
  await waitFor('the key to show the five requests at their actual cost, nothing reserved', async () => {
    const view = await manage('GET', `/v1/manage/keys/${id}`);
    return Math.abs((view.budget_used as number) - spent) < 1e-9 && view.budget_reserved === 0;
  });
});
