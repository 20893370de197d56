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

test('a header identifier is measured in the characters the client wrote, not the bytes Node reads', () => {
  // 300 × "é" is 600 bytes: Node's header value (Latin-1) is 600 characters long.
  const asNodeReadsIt = Buffer.from('é'.repeat(300), 'utf8').toString('latin1');
  expect(nativeSessionInputs({ 'x-session-id': asNodeReadsIt }, undefined).header).toBe(asNodeReadsIt);
  const tooLong = Buffer.from('é'.repeat(513), 'utf8').toString('latin1');
  expect(() => nativeSessionInputs({ 'x-session-id': tooLong }, undefined)).toThrow(/at most 512 characters \(got 513\)/);
});
