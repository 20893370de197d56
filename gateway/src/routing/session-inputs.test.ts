import { expect, test } from 'vitest';
import { maxSessionIdLength, nativeSessionInputs } from './session-inputs.js';

/** A request as Node parses it: each header once, unless `raw` says what was sent. */
function sent(headers: Record<string, string>, raw = Object.entries(headers).flat()) {
  return { headers, rawHeaders: raw };
}

test('the native lane reads session identifiers within the same bound as the other lanes', () => {
  const fits = 'n'.repeat(maxSessionIdLength);
  expect(nativeSessionInputs(sent({ 'x-session-id': ` ${fits} ` }), { session_id: fits, sticky_key: '' })).toEqual({
    header: fits,
    sessionId: fits,
    stickyKey: undefined,
    conversationSeed: undefined,
  });
  const long = `${fits}n`;
  expect(() => nativeSessionInputs(sent({ 'x-session-id': long }), undefined)).toThrow(
    /"x-session-id": a session identifier is at most 512/,
  );
  expect(() => nativeSessionInputs(sent({}), { sticky_key: long })).toThrow(/"metadata\.sticky_key"/);
  // Anything but text is not an identifier, as before.
  expect(nativeSessionInputs(sent({}), { session_id: 42 }).sessionId).toBeUndefined();
});

test('a header identifier is measured in the characters the client wrote, not the bytes Node reads', () => {
  // 300 × "é" is 600 bytes: Node's header value (Latin-1) is 600 characters long.
  const asNodeReadsIt = Buffer.from('é'.repeat(300), 'utf8').toString('latin1');
  expect(nativeSessionInputs(sent({ 'x-session-id': asNodeReadsIt }), undefined).header).toBe(asNodeReadsIt);
  const tooLong = Buffer.from('é'.repeat(513), 'utf8').toString('latin1');
  expect(() => nativeSessionInputs(sent({ 'x-session-id': tooLong }), undefined)).toThrow(/at most 512 characters \(got 513\)/);
});

test('an X-Session-Id sent twice is refused, not read as the joined value Node makes of it', () => {
  // Node joins the two values with ", ".
  const twice = sent({ 'x-session-id': 'alpha, beta' }, ['X-Session-Id', 'alpha', 'x-session-id', 'beta']);
  expect(() => nativeSessionInputs(twice, undefined)).toThrow(/X-Session-Id header was sent more than once/);
  // One header whose value has a comma is an identifier like any other.
  expect(nativeSessionInputs(sent({ 'x-session-id': 'alpha, beta' }), undefined).header).toBe('alpha, beta');
});
