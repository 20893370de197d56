// `npm start` keeps its data across restarts, and the portal's rows name the processor's
// customers and cards: with a state file the local test processor keeps them too.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import type Stripe from 'stripe';
import { stripeClientOf } from './testing.js';
import { startLocalTestProcessor, type LocalTestProcessor } from './index.js';

const running: LocalTestProcessor[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const p of running.splice(0)) await p.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const clientOf = stripeClientOf;
const start = async (stateFile: string) => {
  const p = await startLocalTestProcessor({ stateFile });
  running.push(p);
  return p;
};

test('customers written before a restart are there after it, whatever the new keys', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'processor-state-'));
  dirs.push(dir);
  const file = join(dir, 'payment-processor.json');
  const first = await start(file);
  const made = await clientOf(first).customers.create(
    { email: 'kept@example.com', metadata: { payer_id: 'user:1' } },
    { idempotencyKey: 'create-kept-customer-1' },
  );
  await first.close();
  running.splice(0);

  const second = await start(file);
  expect(second.secretKey).not.toBe(first.secretKey);
  expect((await clientOf(second).customers.retrieve(made.id)) as Stripe.Customer).toMatchObject({ id: made.id, email: 'kept@example.com' });
  // A retry after the restart, with the same key, is the first answer, not a second customer.
  const retried = await clientOf(second).customers.create(
    { email: 'kept@example.com', metadata: { payer_id: 'user:1' } },
    { idempotencyKey: 'create-kept-customer-1' },
  );
  expect(retried.id).toBe(made.id);
  expect(second.customers.size).toBe(1);
});

test('a state file that cannot be read starts empty instead of failing the start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'processor-state-'));
  dirs.push(dir);
  const file = join(dir, 'payment-processor.json');
  writeFileSync(file, '{ not json');
  const p = await start(file);
  expect(p.customers.size).toBe(0);
});
