import { test, afterAll } from 'vitest';
import assert from 'node:assert/strict';
import { ApiError } from '../../../core/errors/index.js';
import { countMessagesTokens, countTexts, countTokensSliced, messagesItems, tokenCounter } from './count.js';
import { countTextTokens, countTokensSliced as countInThisThread } from './tokenizer.js';

afterAll(() => tokenCounter.stop());

test('counts made in the counter thread equal counts made here', async () => {
  const texts = ['Hello, world!', 'a'.repeat(5_000), '中文字符测试'.repeat(300), '🚀 launch'];
  assert.equal(
    await countTexts(texts),
    texts.reduce((sum, t) => sum + countTextTokens(t), 0),
  );
  assert.equal(await countTokensSliced([7, 'hello']), 7 + countTextTokens('hello'), 'fixed amounts are added');
  const request = {
    model: 'm',
    max_tokens: 10,
    system: 'Be brief.',
    messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'What is a gateway?' }] }],
  };
  assert.equal(await countMessagesTokens(request), await countInThisThread(messagesItems(request)));
});

test('counting in the thread stops just past the limit', async () => {
  const counted = await countTokensSliced(['a'.repeat(1_000_000)], 1_000);
  assert.ok(counted > 1_000 && counted < 2_000, String(counted));
});

test('concurrent counts each get their own total', async () => {
  const texts = Array.from({ length: 20 }, (_, i) => 'word '.repeat(i * 50 + 1));
  const totals = await Promise.all(texts.map((t) => countTexts([t])));
  assert.deepEqual(
    totals,
    texts.map((t) => countTextTokens(t)),
  );
});

test('a thread that ends fails the counts in flight with internal_error, and the next count starts a new one', async () => {
  // Distinct runs (the tokenizer caches repeated pieces): hundreds of milliseconds of counting.
  const inFlight = countTexts(Array.from({ length: 200 }, (_, i) => String.fromCharCode(0x4e00 + i).repeat(10_000)));
  await tokenCounter.stop();
  await assert.rejects(inFlight, (error: unknown) => error instanceof ApiError && error.code === 'internal_error');
  assert.equal(await countTexts(['hello world']), countTextTokens('hello world'));
});
