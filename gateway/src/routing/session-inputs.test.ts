import { test } from 'vitest';
import assert from 'node:assert/strict';
import { sessionOf } from './session-affinity.js';
import { nativeSessionInputs } from './session-inputs.js';

test('a native Responses request names its session by header, then metadata.session_id, then sticky_key; its input is not read', () => {
  assert.deepEqual(sessionOf(nativeSessionInputs({ 'x-session-id': ' h-1 ' }, { session_id: 's-1' })), { id: 'h-1', source: 'header' });
  assert.deepEqual(sessionOf(nativeSessionInputs({}, { session_id: 's-1', sticky_key: 'k-1' })), { id: 's-1', source: 'session_id' });
  assert.deepEqual(sessionOf(nativeSessionInputs({}, { sticky_key: 'k-1' })), { id: 'k-1', source: 'sticky_key' });
  for (const metadata of [undefined, null, 'text', { session_id: 5 }, { session_id: '' }])
    assert.equal(sessionOf(nativeSessionInputs({}, metadata)), undefined, JSON.stringify(metadata));
});
