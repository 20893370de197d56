import { expect, test } from 'vitest';
import { maxSessionIdLength, nativeSessionInputs } from './session-inputs.js';

test('the native lane reads session identifiers within the same bound as the other lanes', () => {
  const fits = 'n'.repeat(maxSessionIdLength);
  expect(nativeSessionInputs({ 'x-session-id': ` ${fits} ` }, { session_id: fits, sticky_key: '' })).toEqual({
    header: fits,
    sessionId: fits,
    stickyKey: undefined,
    conversationSeed: undefined,
  });
  const long = `${fits}n`;
  expect(() => nativeSessionInputs({ 'x-session-id': long }, undefined)).toThrow(/"x-session-id": a session identifier is at most 512/);
  expect(() => nativeSessionInputs({}, { sticky_key: long })).toThrow(/"metadata\.sticky_key"/);
  // Anything but text is not an identifier, as before.
  expect(nativeSessionInputs({}, { session_id: 42 }).sessionId).toBeUndefined();
});
