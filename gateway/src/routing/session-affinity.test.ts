import { onTestFinished, test } from 'vitest';
import assert from 'node:assert/strict';
import { MemoryStore } from '../../../core/store/index.js';
import { SessionAffinity, sessionOf } from './session-affinity.js';

const none = { header: undefined, sessionId: undefined, stickyKey: undefined, conversationSeed: undefined };

test('precedence: X-Session-Id > metadata.session_id > metadata.sticky_key > conversation', () => {
  assert.deepEqual(sessionOf({ header: 'h', sessionId: 's', stickyKey: 'k', conversationSeed: 'c' }), { id: 'h', source: 'header' });
  assert.deepEqual(sessionOf({ ...none, sessionId: 's', stickyKey: 'k', conversationSeed: 'c' }), { id: 's', source: 'session_id' });
  assert.deepEqual(sessionOf({ ...none, stickyKey: 'k', conversationSeed: 'c' }), { id: 'k', source: 'sticky_key' });
  const a = sessionOf({ ...none, conversationSeed: 'system\u0000hello' });
  const b = sessionOf({ ...none, conversationSeed: 'system\u0000hello' });
  assert.equal(a?.source, 'conversation');
  assert.equal(a?.id, b?.id);
  assert.notEqual(a?.id, sessionOf({ ...none, conversationSeed: 'system\u0000bye' })?.id);
  assert.equal(sessionOf(none), undefined);
});

test('pins are per API key and expire', async () => {
  let now = Date.UTC(2025, 2, 14, 9, 0, 0);
  const store = new MemoryStore('t:', () => now);
  onTestFinished(() => store.close());
  const sessions = new SessionAffinity(store, 80);
  const session = { id: 'chat-1', source: 'header' as const };
  await sessions.pin('key_a', session, 'sim-eu');
  assert.equal(await sessions.pinned('key_a', session), 'sim-eu');
  assert.equal(await sessions.pinned('key_b', session), null, 'another tenant with the same session id is not pinned');
  now += 79;
  assert.equal(await sessions.pinned('key_a', session), 'sim-eu', 'still pinned just before the TTL');
  now += 1;
  assert.equal(await sessions.pinned('key_a', session), null, 'expired after the TTL');
});
