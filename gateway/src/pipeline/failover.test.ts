import { onTestFinished, test, vi } from 'vitest';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { buildCatalogue, type ModelRoute } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import { MemoryStore } from '../../../core/store/index.js';
import { RequestCancellation } from '../http/cancellation.js';
import { CredentialPool } from '../routing/credential-pool.js';
import { SupplierHealth } from '../routing/supplier-health.js';
import { isFailoverable, tryCandidates } from './failover.js';

const routes: readonly ModelRoute[] = buildCatalogue(
  {
    suppliers: ['a', 'b', 'c'].map((name, i) => ({
      name,
      protocol: 'openai',
      base_url: 'http://127.0.0.1:1/v1',
      region: 'EU',
      priority: i,
      timeout_ms: 1_000,
      models: [{ id: 'm', input_usd_per_mtok: 1, output_usd_per_mtok: 1 }],
    })),
  },
  {},
).routes.get('m')!;

/** Supplier state without credential pools (these suppliers have none). */
const state = (health: SupplierHealth) => ({
  health,
  credentials: new CredentialPool(
    new MemoryStore('pool:'),
    () => undefined,
    () => [],
  ),
});

function fakeRequest(): FastifyRequest {
  return { log: { warn: () => undefined } } as unknown as FastifyRequest;
}
function fakeCancellation(): { cancellation: RequestCancellation; raw: EventEmitter & { writableFinished: boolean } } {
  const raw = Object.assign(new EventEmitter(), { writableFinished: false, destroyed: false });
  const request = { raw: { socket: { destroyed: false } } };
  return { cancellation: new RequestCancellation({ raw, request } as unknown as FastifyReply), raw };
}

test('which failures fail over: rate limits and supplier-side failures, not client errors', () => {
  assert.equal(isFailoverable(new ApiError('rate_limit_exceeded')), true);
  assert.equal(isFailoverable(new ApiError('provider_timeout')), true);
  assert.equal(isFailoverable(new ApiError('provider_unavailable')), true);
  assert.equal(isFailoverable(ApiError.fromProvider('server_error', 500, 'boom')), true);
  assert.equal(isFailoverable(ApiError.fromProvider('context_length_exceeded', 400, 'too long')), false);
  assert.equal(isFailoverable(new ApiError('model_not_found')), false);
});

test('the next candidate answers after a failure; every attempt is recorded with its selection time', async () => {
  const store = new MemoryStore('t:');
  onTestFinished(() => store.close());
  const request = fakeRequest();
  const { cancellation } = fakeCancellation();
  const tried: string[] = [];
  const began = performance.now();
  const value = await tryCandidates(request, routes, cancellation, state(new SupplierHealth(store)), async (route) => {
    tried.push(route.supplier.name);
    if (route.supplier.name === 'a') throw ApiError.fromProvider('rate_limit_exceeded', 429, 'slow down');
    return { value: `answer from ${route.supplier.name}` };
  });
  const took = performance.now() - began;
  assert.equal(value, 'answer from b');
  assert.deepEqual(tried, ['a', 'b']);
  const attempts = request.routing!.attempts;
  assert.deepEqual(
    attempts.map((a) => [a.supplier, a.outcome, a.status, a.code]),
    [
      ['a', 'failed', 429, 'rate_limit_exceeded'],
      ['b', 'ok', 200, undefined],
    ],
  );
  assert.equal(attempts[0]!.selectionMs, undefined);
  const selectionMs = attempts[1]!.selectionMs!;
  assert.ok(selectionMs >= 0 && selectionMs <= took, `selection time ${selectionMs} ms is part of the ${took} ms the call took`);
});

test('all failing: the primary error is returned; a client error stops at once', async () => {
  const store = new MemoryStore('t:');
  onTestFinished(() => store.close());
  const { cancellation } = fakeCancellation();
  const health = new SupplierHealth(store);
  await assert.rejects(
    tryCandidates(fakeRequest(), routes, cancellation, state(health), async (route) => {
      throw ApiError.fromProvider(`down_${route.supplier.name}`, route.supplier.name === 'a' ? 503 : 500, 'down');
    }),
    (e: unknown) => e instanceof ApiError && e.code === 'down_a' && e.status === 503,
  );
  let calls = 0;
  await assert.rejects(
    tryCandidates(fakeRequest(), routes, cancellation, state(health), async () => {
      calls++;
      throw ApiError.fromProvider('invalid_request_error', 400, 'bad');
    }),
    (e: unknown) => e instanceof ApiError && e.status === 400,
  );
  assert.equal(calls, 1);
});

test('all failing: the first failure answers, retryable when a later one was (a refused credential, then an overload)', async () => {
  const store = new MemoryStore('t:');
  onTestFinished(() => store.close());
  const { cancellation } = fakeCancellation();
  const refused = new ApiError('upstream_error', { humanMessage: 'refused the gateway credentials', retryable: false });
  const answer = (later: () => ApiError): Promise<ApiError> =>
    tryCandidates(fakeRequest(), routes, cancellation, state(new SupplierHealth(store)), async (route) => {
      throw route.supplier.name === 'a' ? refused : later();
    }).then(
      (): ApiError => assert.fail('every candidate failed'),
      (e: unknown) => e as ApiError,
    );
  const overloaded = await answer(() => new ApiError('provider_unavailable'));
  assert.deepEqual(
    [overloaded.code, overloaded.retryable, overloaded.humanMessage],
    ['upstream_error', true, 'refused the gateway credentials'],
  );
  assert.equal(refused.retryable, false, 'the attempt’s own error is unchanged');
  const allRefused = await answer(() => refused);
  assert.equal(allRefused.retryable, false);
});

test('a late failure (stream already started) is recorded but not failed over', async () => {
  const store = new MemoryStore('t:');
  onTestFinished(() => store.close());
  const request = fakeRequest();
  const { cancellation } = fakeCancellation();
  const value = await tryCandidates(request, routes, cancellation, state(new SupplierHealth(store)), async () => ({
    value: 'partial',
    lateError: new ApiError('stream_interrupted'),
  }));
  assert.equal(value, 'partial');
  assert.deepEqual(
    request.routing!.attempts.map((a) => [a.supplier, a.outcome, a.code]),
    [['a', 'failed', 'stream_interrupted']],
  );
});

test('the attempt deadline aborts the attempt with provider_timeout; a client disconnect stops failover', async () => {
  // The supplier's 1 s deadline is a timer: fake timers step to just before it and onto it.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  onTestFinished(() => void vi.useRealTimers());
  const store = new MemoryStore('t:');
  onTestFinished(() => store.close());
  const { cancellation, raw } = fakeCancellation();
  let reason: unknown;
  const timedOut = assert.rejects(
    tryCandidates(
      fakeRequest(),
      routes.slice(0, 1),
      cancellation,
      state(new SupplierHealth(store)),
      (_route, _i, signal) =>
        new Promise<{ value: string }>((_resolve, reject) =>
          signal.once('abort', () => {
            reason = signal.reason;
            reject(signal.reason);
          }),
        ),
    ),
    (e: unknown) => e instanceof ApiError && e.code === 'provider_timeout',
  );
  await vi.advanceTimersByTimeAsync(999);
  assert.equal(reason, undefined, 'not aborted before the 1 s supplier deadline');
  await vi.advanceTimersByTimeAsync(1);
  await timedOut;
  assert.ok((reason as unknown) instanceof ApiError, 'aborted with the deadline error');
  let calls = 0;
  const pending = tryCandidates(fakeRequest(), routes, cancellation, state(new SupplierHealth(store)), (_route, _i, signal) => {
    calls++;
    return new Promise<{ value: string }>((_resolve, reject) =>
      signal.once('abort', () => reject(new ApiError('request_rejected', { status: 499 }))),
    );
  });
  raw.emit('close'); // the client went away
  await assert.rejects(pending);
  assert.equal(calls, 1, 'no failover for a client that left');
});
