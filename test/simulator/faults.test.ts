// Fault injection as the official SDKs experience it: status errors, latency, hangs, cut streams,
// failFirst, the admin endpoint and API-key checks.
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, onTestFinished, test } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { type RunningSimulator, startSimulator } from './server.js';
import { waitFor } from '../support/wait-for.js';

let sim: RunningSimulator;
let oa: OpenAI;
let an: Anthropic;

beforeAll(async () => {
  sim = await startSimulator({ name: 'faults' });
  oa = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'x', maxRetries: 0 });
  an = new Anthropic({ baseURL: sim.url, apiKey: 'x', maxRetries: 0 });
});
afterAll(() => sim.close());

const chat = (headers: Record<string, string> = {}, client = oa) =>
  client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hello faults' }] }, { headers });
const message = (headers: Record<string, string> = {}) =>
  an.messages.create({ model: 'c', max_tokens: 50, messages: [{ role: 'user', content: 'hello faults' }] }, { headers });

/** Resolves with the rejection reason (fails when the promise resolves). */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  assert.fail('expected a rejection');
}

describe('status faults by header', () => {
  test('429 → OpenAI RateLimitError with retry-after and OpenAI error body', async () => {
    const err = await rejection(chat({ 'x-sim-status': '429', 'x-sim-retry-after': '7' }));
    assert.ok(err instanceof OpenAI.RateLimitError);
    assert.equal(err.status, 429);
    assert.equal(err.headers?.get('retry-after'), '7');
    assert.equal(err.headers?.get('x-sim-instance'), 'faults');
    assert.equal(err.code, 'rate_limit_exceeded');
    assert.equal(err.type, 'requests');
  });

  test('429 → Anthropic RateLimitError, rate_limit_error, default retry-after 1', async () => {
    const err = await rejection(message({ 'x-sim-status': '429' }));
    assert.ok(err instanceof Anthropic.RateLimitError);
    assert.equal(err.headers?.get('retry-after'), '1');
    assert.equal(err.type, 'rate_limit_error');
  });

  test('503 / 500 / 502 → OpenAI InternalServerError; 529 → Anthropic OverloadedError, 500 → api_error', async () => {
    for (const status of [503, 500, 502]) {
      const err = await rejection(chat({ 'x-sim-status': String(status) }));
      assert.ok(err instanceof OpenAI.InternalServerError);
      assert.equal(err.status, status);
      assert.equal(err.type, 'server_error');
    }
    const overloaded = await rejection(message({ 'x-sim-status': '529' }));
    assert.ok(overloaded instanceof Anthropic.OverloadedError);
    assert.equal(overloaded.type, 'overloaded_error');
    const internal = await rejection(message({ 'x-sim-status': '500' }));
    assert.ok(internal instanceof Anthropic.InternalServerError);
    assert.equal(internal.type, 'api_error');
  });
});

describe('latency, hang and cut streams', () => {
  test('x-sim-latency-ms delays the answer', async () => {
    const t0 = performance.now();
    await chat({ 'x-sim-latency-ms': '150' });
    assert.ok(performance.now() - t0 >= 140);
  });

  test('hang: a client timeout aborts, and close() returns promptly with hung sockets', async () => {
    const own = await startSimulator({ name: 'hang', faults: { hang: true } });
    let closed = false;
    onTestFinished(async () => {
      if (!closed) await own.close();
    });
    const client = new OpenAI({ baseURL: `${own.url}/v1`, apiKey: 'x', maxRetries: 0, timeout: 150 });
    const err = await rejection(chat({}, client));
    assert.ok(err instanceof OpenAI.APIConnectionTimeoutError);
    // A second hung request still pending while we close.
    const pending = fetch(`${own.url}/v1/chat/completions`, { method: 'POST', body: '{}', headers: { 'x-sim-hang': '1' } });
    const settled = pending.then(
      () => 'resolved',
      () => 'rejected',
    );
    await waitFor('the second hung request to arrive', () => own.requests.length === 2);
    // close() returns although both requests hang (were it to wait for them, it would never return).
    await own.close();
    closed = true;
    assert.equal(await settled, 'rejected');
  });

  test('x-sim-hang: 0 overrides an instance hang', async () => {
    sim.setFaults({ hang: true });
    try {
      const res = await chat({ 'x-sim-hang': '0' });
      assert.equal(res.choices.length, 1);
    } finally {
      sim.setFaults(undefined);
    }
  });

  test('cut-after: the OpenAI SDK stream throws after N chunks (no [DONE], no finish_reason)', async () => {
    const stream = await oa.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'cut me off please' }], stream: true },
      { headers: { 'x-sim-cut-after': '3' } },
    );
    const got: OpenAI.ChatCompletionChunk[] = [];
    const err = await rejection(
      (async () => {
        for await (const chunk of stream) got.push(chunk);
      })(),
    );
    assert.ok(err instanceof TypeError, `undici reports the torn connection: ${String(err)}`);
    assert.equal(got.length, 3);
    assert.ok(got.every((c) => c.choices[0]?.finish_reason === null));
  });

  test('cut-after: the Anthropic SDK stream throws before message_stop (ping is not yielded)', async () => {
    const events: string[] = [];
    const stream = an.messages.stream(
      { model: 'c', max_tokens: 50, messages: [{ role: 'user', content: 'cut me off please' }] },
      { headers: { 'x-sim-cut-after': '5' } },
    );
    stream.on('streamEvent', (e) => events.push(e.type));
    const err = await rejection(stream.finalMessage());
    assert.ok(err instanceof Anthropic.AnthropicError);
    assert.match(String(err), /terminated/);
    assert.deepEqual(events, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta']);
  });

  test('cut-after 0 on the instance: 200 headers then a dropped socket', async () => {
    sim.setFaults({ cutAfterEvents: 0 });
    try {
      const res = await fetch(`${sim.url}/v1/responses`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm', input: 'x', stream: true }),
      });
      assert.equal(res.status, 200);
      await assert.rejects(res.text(), TypeError);
    } finally {
      sim.setFaults(undefined);
    }
  });
});

describe('instance faults', () => {
  test('failFirst: only the first N requests fail; the SDK retries through them', async () => {
    sim.setFaults({ status: 503, failFirst: 2 });
    try {
      assert.equal((await rejection(chat())) instanceof OpenAI.InternalServerError, true);
      assert.equal((await rejection(chat())) instanceof OpenAI.InternalServerError, true);
      await chat();
      await chat();
      // Restarted count; retry-after 0 keeps the SDK's backoff out of the test's runtime.
      sim.setFaults({ status: 429, failFirst: 2, retryAfterSeconds: 0 });
      const before = sim.requests.length;
      const retrying = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'x', maxRetries: 2 });
      const res = await chat({}, retrying);
      assert.equal(res.choices.length, 1);
      assert.equal(sim.requests.length - before, 3);
    } finally {
      sim.setFaults(undefined);
    }
  });

  test('options.faults apply from the start; x-sim-status: 0 overrides them', async () => {
    const own = await startSimulator({ faults: { status: 500, latencyMs: 20 } });
    try {
      const res = await fetch(`${own.url}/v1/embeddings`, { method: 'POST', body: JSON.stringify({ model: 'e', input: 'x' }) });
      assert.equal(res.status, 500);
      assert.equal(((await res.json()) as { error: { type: string } }).error.type, 'server_error');
      const ok = await fetch(`${own.url}/v1/embeddings`, {
        method: 'POST',
        headers: { 'x-sim-status': '0' },
        body: JSON.stringify({ model: 'e', input: 'x' }),
      });
      assert.equal(ok.status, 200);
    } finally {
      await own.close();
    }
  });

  test('admin endpoint: POST/GET/DELETE /_sim/faults and GET /_sim/requests', async () => {
    const post = await fetch(`${sim.url}/_sim/faults`, { method: 'POST', body: JSON.stringify({ status: 502, failFirst: 1 }) });
    assert.equal(post.status, 200);
    assert.equal(post.headers.get('x-sim-instance'), 'faults');
    assert.deepEqual(await (await fetch(`${sim.url}/_sim/faults`)).json(), { faults: { status: 502, failFirst: 1 } });
    assert.equal(((await rejection(chat())) as { status?: number }).status, 502);
    await chat();
    await fetch(`${sim.url}/_sim/faults`, { method: 'POST', body: JSON.stringify({ status: 503 }) });
    assert.equal(((await rejection(message())) as { status?: number }).status, 503);
    const del = await fetch(`${sim.url}/_sim/faults`, { method: 'DELETE' });
    assert.deepEqual(await del.json(), { faults: null });
    await message();
    const bad = await fetch(`${sim.url}/_sim/faults`, { method: 'POST', body: JSON.stringify({ status: 418 }) });
    assert.equal(bad.status, 400);
    const { requests } = (await (await fetch(`${sim.url}/_sim/requests`)).json()) as { requests: Array<{ path: string; body: unknown }> };
    assert.deepEqual(
      requests.slice(-1).map((r) => r.path),
      ['/v1/messages'],
    );
    assert.ok(requests.every((r) => !r.path.startsWith('/_sim')));
  });
});

describe('api key', () => {
  test('wrong or missing key → 401 in each family format; Bearer and x-api-key accepted', async () => {
    const own = await startSimulator({ apiKey: 'sekrit' });
    try {
      const bad = new OpenAI({ baseURL: `${own.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
      const err = await rejection(chat({}, bad));
      assert.ok(err instanceof OpenAI.AuthenticationError);
      assert.equal(err.code, 'invalid_api_key');
      const good = new OpenAI({ baseURL: `${own.url}/v1`, apiKey: 'sekrit', maxRetries: 0 });
      await chat({}, good);
      const anBad = new Anthropic({ baseURL: own.url, apiKey: 'wrong', maxRetries: 0 });
      const aErr = await rejection(anBad.messages.create({ model: 'c', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }));
      assert.ok(aErr instanceof Anthropic.AuthenticationError);
      assert.equal(aErr.type, 'authentication_error');
      const anGood = new Anthropic({ baseURL: own.url, apiKey: 'sekrit', maxRetries: 0 });
      await anGood.messages.create({ model: 'c', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
      const health = await fetch(`${own.url}/health`);
      assert.deepEqual(await health.json(), { status: 'ok' });
    } finally {
      await own.close();
    }
  });
});
