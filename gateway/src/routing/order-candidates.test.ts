import { test } from 'vitest';
import assert from 'node:assert/strict';
import { buildCatalogue, type ModelRoute } from '../../../core/config/index.js';
import { orderCandidates, rankCandidates } from './order-candidates.js';

function routes(suppliers: { name: string; priority: number; weight?: number }[]): readonly ModelRoute[] {
  const catalogue = buildCatalogue(
    {
      suppliers: suppliers.map((s) => ({
        ...s,
        protocol: 'openai',
        base_url: 'http://127.0.0.1:1/v1',
        region: 'EU',
        models: [{ id: 'm', input_usd_per_mtok: 1, output_usd_per_mtok: 1 }],
      })),
    },
    {},
  );
  return catalogue.routes.get('m')!;
}

/** A seeded generator (mulberry32), so the weighted order is reproducible. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const names = (ordered: ModelRoute[]) => ordered.map((r) => r.supplier.name);
const healthy = { pinnedSupplier: null, isOpen: () => false };

test('lower priority first; every candidate appears once', () => {
  const ordered = orderCandidates(
    routes([
      { name: 'c', priority: 3 },
      { name: 'a', priority: 1 },
      { name: 'b', priority: 2 },
    ]),
    { ...healthy, random: seeded(1) },
  );
  assert.deepEqual(names(ordered), ['a', 'b', 'c']);
});

test('within a priority, first places follow the weights', () => {
  const candidates = routes([
    { name: 'heavy', priority: 1, weight: 3 },
    { name: 'light', priority: 1, weight: 1 },
  ]);
  const random = seeded(42);
  let heavyFirst = 0;
  for (let i = 0; i < 4000; i++) if (orderCandidates(candidates, { ...healthy, random })[0]!.supplier.name === 'heavy') heavyFirst++;
  assert.ok(heavyFirst / 4000 > 0.72 && heavyFirst / 4000 < 0.78, `heavy first ${heavyFirst / 4000}`);
});

test('open circuits go last (still tried), a pinned healthy supplier goes first', () => {
  const candidates = routes([
    { name: 'a', priority: 1 },
    { name: 'b', priority: 2 },
    { name: 'c', priority: 3 },
  ]);
  assert.deepEqual(names(orderCandidates(candidates, { pinnedSupplier: null, isOpen: (s) => s === 'a', random: seeded(1) })), [
    'b',
    'c',
    'a',
  ]);
  assert.deepEqual(names(orderCandidates(candidates, { pinnedSupplier: 'c', isOpen: () => false, random: seeded(1) })), ['c', 'a', 'b']);
  // A pinned supplier whose circuit is open does not jump the queue.
  assert.deepEqual(names(orderCandidates(candidates, { pinnedSupplier: 'c', isOpen: (s) => s === 'c', random: seeded(1) })), [
    'a',
    'b',
    'c',
  ]);
  // A pin to a supplier that is not a candidate (another region) changes nothing.
  assert.deepEqual(names(orderCandidates(candidates, { pinnedSupplier: 'zz', isOpen: () => false, random: seeded(1) })), ['a', 'b', 'c']);
});

test('the preferred route ignores health: an open circuit moves a route back, not out of first rank', () => {
  const candidates = routes([
    { name: 'a', priority: 1 },
    { name: 'b', priority: 2 },
    { name: 'c', priority: 3 },
  ]);
  const skipped = rankCandidates(candidates, { pinnedSupplier: null, isOpen: (s) => s === 'a', random: seeded(1) });
  assert.deepEqual(names(skipped.ordered), ['b', 'c', 'a']);
  assert.equal(skipped.preferred?.supplier.name, 'a');
  // A session pin is the preference, open or not.
  assert.equal(
    rankCandidates(candidates, { pinnedSupplier: 'c', isOpen: (s) => s === 'c', random: seeded(1) }).preferred?.supplier.name,
    'c',
  );
  assert.equal(rankCandidates(candidates, { pinnedSupplier: 'zz', isOpen: () => false, random: seeded(1) }).preferred?.supplier.name, 'a');
});
