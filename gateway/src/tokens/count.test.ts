import { test, afterAll } from 'vitest';
import assert from 'node:assert/strict';
import { ApiError } from '../../../core/errors/index.js';
import { countMessagesTokens, countOrBound, countTokensSliced, messagesItems, tokenCounter, tokenCounterWith } from './count.js';
import { countInLane, countTextTokens } from './tokenizer.js';

afterAll(() => tokenCounter.stop());

test('counts made in the counter thread equal counts made here', async () => {
  const texts = ['Hello, world!', 'a'.repeat(5_000), '中文字符测试'.repeat(300), '🚀 launch'];
  assert.equal(
    await countTokensSliced(texts),
    texts.reduce((sum, t) => sum + countTextTokens(t), 0),
  );
  assert.equal(await countTokensSliced([7, 'hello']), 7 + countTextTokens('hello'), 'fixed amounts are added');
  const request = {
    model: 'm',
    max_tokens: 10,
    system: 'Be brief.',
    messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'What is a gateway?' }] }],
  };
  assert.equal(await countMessagesTokens(request), await countInLane(messagesItems(request)));
});

test('counting in the thread stops just past the limit', async () => {
  const counted = await countTokensSliced(['a'.repeat(1_000_000)], 1_000);
  assert.ok(counted > 1_000 && counted < 2_000, String(counted));
});

test('concurrent counts each get their own total', async () => {
  const texts = Array.from({ length: 20 }, (_, i) => 'word '.repeat(i * 50 + 1));
  const totals = await Promise.all(texts.map((t) => countTokensSliced([t])));
  assert.deepEqual(
    totals,
    texts.map((t) => countTextTokens(t)),
  );
});

test('a thread that ends fails the counts in flight with internal_error, and the next count starts a new one', async () => {
  // Distinct runs (the tokenizer caches repeated pieces): hundreds of milliseconds of counting.
  const inFlight = countTokensSliced(Array.from({ length: 200 }, (_, i) => String.fromCharCode(0x4e00 + i).repeat(10_000)));
  await tokenCounter.stop();
  await assert.rejects(inFlight, (error: unknown) => error instanceof ApiError && error.code === 'internal_error');
  assert.equal(await countTokensSliced(['hello world']), countTextTokens('hello world'));
});

test('a count sent while the thread is being stopped is answered by the next thread', async () => {
  await countTokensSliced(['warm']);
  const stopping = tokenCounter.stop();
  const during = countTokensSliced(['hello there']);
  await stopping;
  assert.equal(await during, countTextTokens('hello there'));
});

test('a thread that cannot start fails its count with internal_error, and is not started again for every count', async () => {
  const counter = tokenCounterWith({ url: new URL('./count-worker-fails.fixture.mjs', import.meta.url) });
  const isInternal = (error: unknown) => error instanceof ApiError && error.code === 'internal_error';
  await assert.rejects(counter.count(['x'], Infinity), isInternal);
  // Within the pause: refused at once, naming the failure, without a new thread.
  await assert.rejects(counter.count(['x'], Infinity), (error: unknown) => {
    return isInternal(error) && /failed less than 1000 ms ago: .*fixture/.test(String((error as ApiError).cause));
  });
  await counter.stop();
});

test('usage falls back to the reserved bound when counting fails, and the failure is logged', async () => {
  const warnings: unknown[] = [];
  const request = { id: 'req_1', log: { warn: (entry: unknown) => warnings.push(entry) } } as never;
  assert.equal(await countOrBound(() => Promise.reject(new ApiError('internal_error')), 123, request), 123);
  assert.equal(warnings.length, 1);
  assert.equal(await countOrBound(() => Promise.resolve(7), 123, request), 7);
});
