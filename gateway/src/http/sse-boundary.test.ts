import { expect, test } from 'vitest';
import { SseBoundary } from './sse-boundary.js';

const text = (b: Buffer) => b.toString('utf8');

test('passes on whole events only, holding a half-sent one until it is complete', () => {
  const boundary = new SseBoundary();
  expect(text(boundary.take(Buffer.from('event: a\ndata: {"x":1}\n\nevent: b\ndata: {"y"')))).toBe('event: a\ndata: {"x":1}\n\n');
  expect(text(boundary.take(Buffer.from(':2}\n')))).toBe('');
  expect(text(boundary.take(Buffer.from('\n')))).toBe('event: b\ndata: {"y":2}\n\n');
  expect(text(boundary.rest())).toBe('');
});

test('CRLF and CR line ends, and a boundary split across chunks', () => {
  const crlf = new SseBoundary();
  expect(text(crlf.take(Buffer.from('data: 1\r\n\r')))).toBe('');
  expect(text(crlf.take(Buffer.from('\ndata: 2')))).toBe('data: 1\r\n\r\n');
  expect(text(crlf.rest())).toBe('data: 2');
  const cr = new SseBoundary();
  expect(text(cr.take(Buffer.from('data: 1\r\rdata: 2\r')))).toBe('data: 1\r\r');
});
