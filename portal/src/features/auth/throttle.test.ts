import { expect, test } from 'vitest';
import { ApiError } from '../../../../core/errors/index.js';
import { MemoryStore } from '../../../../core/store/index.js';
import { createTestStore } from '../../../../core/store/testing.js';
import { EmailRequestThrottle, LoginThrottle, recipientClientsFactor } from './throttle.js';

const refused = (attempt: Promise<void>) =>
  attempt.then(
    () => undefined,
    (error: unknown) => (error instanceof ApiError ? error.humanMessage : 'other'),
  );

test('one client cannot flood an address nor keep its owner from their own mail; all clients together are bounded too', async () => {
  const store = new MemoryStore('t:');
  const throttle = new EmailRequestThrottle(store, 'pepper', { perRecipient: 3, perClient: 1_000, windowMs: 60_000 });
  const victim = 'Victim@Example.com';
  for (let i = 0; i < 3; i++) expect(await refused(throttle.take('reset_password', victim, '10.0.0.1'))).toBeUndefined();
  // The flooding client is refused, whatever case it writes the address in…
  expect(await refused(throttle.take('reset_password', victim.toLowerCase(), '10.0.0.1'))).toMatch(/this address/);
  // …while the owner, from their own address, still gets their reset; another kind is counted apart.
  expect(await refused(throttle.take('reset_password', victim, '192.168.1.9'))).toBeUndefined();
  expect(await refused(throttle.take('verify_email', victim, '10.0.0.1'))).toBeUndefined();
  // Many clients together stop at recipientClientsFactor × the per-client bound.
  let allowed = 4; // so far: the flooder's 3 and the owner's 1 (refused requests count against the total too)
  for (let client = 2; client < 20; client++)
    for (let i = 0; i < 3; i++) if ((await refused(throttle.take('reset_password', victim, `10.0.1.${client}`))) === undefined) allowed++;
  expect(allowed).toBeLessThanOrEqual(3 * recipientClientsFactor);
  await store.close();
});

test('one client spreading requests over many addresses meets its own bound', async () => {
  const store = new MemoryStore('t:');
  const throttle = new EmailRequestThrottle(store, 'pepper', { perRecipient: 3, perClient: 5, windowMs: 60_000 });
  const outcomes = [];
  for (let i = 0; i < 7; i++) outcomes.push(await refused(throttle.take('verify_email', `user${i}@example.com`, '10.0.0.1')));
  expect(outcomes.slice(0, 5)).toEqual([undefined, undefined, undefined, undefined, undefined]);
  expect(outcomes[5]).toMatch(/this network/);
  expect(await refused(throttle.take('verify_email', 'user0@example.com', '10.0.0.2'))).toBeUndefined();
  await store.close();
});

test('an un-count after the counter expired does not leave it below zero (which would allow an extra guess)', async () => {
  const store = createTestStore();
  const address = `10.9.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
  const throttle = new LoginThrottle(store, 'pepper', { perAccount: 100, perAddress: 2, windowMs: 60_000 });
  const counter = `portal:login-fail:address:${address}`;
  try {
    await throttle.begin('a@example.com', address);
    await store.del(counter); // the window ended between the attempt's count and its un-count
    await throttle.succeeded('a@example.com', address);
    expect(Number((await store.get(counter)) ?? '0')).toBe(0);
    // The next window allows exactly the limit's failed attempts.
    expect(await refused(throttle.begin('b@example.com', address))).toBeUndefined();
    expect(await refused(throttle.begin('b@example.com', address))).toBeUndefined();
    expect(await refused(throttle.begin('b@example.com', address))).toMatch(/Too many failed sign-in attempts/);
  } finally {
    await store.del(counter);
    await store.close();
  }
});
