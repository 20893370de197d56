import { test } from 'vitest';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { buildCatalogue, type ModelRoute } from '../../core/config/index.js';
import { ApiError } from '../../core/errors/index.js';
import { MemoryStore } from '../../core/store/index.js';
import { RequestCancellation } from '../../gateway/src/http/cancellation.js';
import { SupplierHealth } from '../../gateway/src/routing/supplier-health.js';
import { CredentialPool } from '../../gateway/src/routing/credential-pool.js';
import { isGatewayFault, tryCandidates } from '../../gateway/src/pipeline/failover.js';
import { waitFor } from '../support/wait-for.js';

// A failure of the gateway's own making (finding 2 of issue 13: a stack overflow while building
// the upstream body) must never be charged to a supplier: one tenant could otherwise open a
// supplier's shared circuit for every tenant.

const routes: readonly ModelRoute[] = buildCatalogue(
  {
    suppliers: ['eu', 'us'].map((name, i) => ({
      name,
      protocol: 'openai',
      base_url: 'http://127.0.0.1:1/v1',
      region: name.toUpperCase(),
      priority: i,
      timeout_ms: 1_000,
      models: [{ id: 'm', input_usd_per_mtok: 1, output_usd_per_mtok: 1 }],
    })),
  },
  {},
).routes.get('m')!;

function fakeCancellation(): RequestCancellation {
  const raw = Object.assign(new EventEmitter(), { writableFinished: false, destroyed: false });
  return new RequestCancellation({ raw, request: { raw: { socket: { destroyed: false } } } } as unknown as FastifyReply);
}

test('gateway faults are told apart from supplier failures', () => {
  assert.equal(isGatewayFault(new RangeError('Maximum call stack size exceeded')), true);
  assert.equal(isGatewayFault(new ApiError('internal_error')), true);
  assert.equal(isGatewayFault(new ApiError('provider_unavailable')), false);
  assert.equal(isGatewayFault(ApiError.fromProvider('server_error', 500, 'boom')), false);
});

test('an attempt that fails inside the gateway is a 500 that neither fails over nor counts against the supplier', async () => {
  const store = new MemoryStore('t:');
  const health = new SupplierHealth(store, { failureThreshold: 1, windowMs: 60_000, cooldownMs: 60_000 });
  await health.start();
  // These suppliers have no credential pool.
  const suppliers = {
    health,
    credentials: new CredentialPool(
      store,
      () => undefined,
      () => [],
    ),
  };
  try {
    const tried: string[] = [];
    const request = { log: { warn: () => undefined } } as unknown as FastifyRequest;
    // Several times over the threshold of one failure: the circuit would be open after the first.
    for (let i = 0; i < 3; i++) {
      await assert.rejects(
        tryCandidates(request, routes, fakeCancellation(), suppliers, async (route) => {
          tried.push(route.supplier.name);
          throw new RangeError('Maximum call stack size exceeded');
        }),
        (e: unknown) => e instanceof ApiError && e.code === 'internal_error' && e.status === 500,
      );
    }
    assert.deepEqual(tried, ['eu', 'eu', 'eu'], "no failover to another region for the gateway's own failure");
    // A real supplier failure still counts. Health reports are written in order, so once this
    // one has opened `us`, any report about `eu` would have landed too.
    await assert.rejects(
      tryCandidates(request, routes.slice(1), fakeCancellation(), suppliers, async () => {
        throw new ApiError('provider_unavailable');
      }),
    );
    await waitFor('the circuit of us, opened by its failure', async () => {
      await health.load(['eu', 'us']);
      return health.isOpen('us');
    });
    assert.equal(health.isOpen('eu'), false, "eu's circuit stays closed");
  } finally {
    await health.stop();
    await store.close();
  }
});
