import { test } from 'vitest';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { countTokens } from 'gpt-tokenizer';
import { boundedPieces, countTextTokens, countInLane, maxPieceLength } from './tokenizer.js';

const prose = readFileSync(new URL('../../../docs/interfaces.md', import.meta.url), 'utf8');

test('pieces are bounded, lose nothing and never split a surrogate pair', () => {
  for (const text of [prose, 'a'.repeat(10_000), '🚀'.repeat(1_000), `x${'🚀'.repeat(1_000)}`, '', 'short']) {
    const pieces = [...boundedPieces(text)];
    assert.equal(pieces.join(''), text);
    for (const piece of pieces) {
      assert.ok(piece.length <= maxPieceLength);
      assert.ok(!/[\ud800-\udbff]$/.test(piece), 'a piece ends inside a surrogate pair');
    }
  }
});

test('counts stay close to the unbounded tokenizer: exact on runs, within 0.5 % on prose', () => {
  assert.equal(countTextTokens('a'.repeat(4_000)), countTokens('a'.repeat(4_000)));
  assert.equal(countTextTokens('中文字符测试'.repeat(500)), countTokens('中文字符测试'.repeat(500)));
  const exact = countTokens(prose);
  assert.ok(Math.abs(countTextTokens(prose) - exact) <= exact * 0.005, `${countTextTokens(prose)} vs ${exact}`);
});

test('a large count lets the event loop turn between slices, and gives the same total', async () => {
  // Distinct runs (the tokenizer caches repeated pieces): seconds of work for the old quadratic count.
  const texts = Array.from({ length: 200 }, (_, i) => String.fromCharCode(0x4e00 + i).repeat(10_000));
  let turns = 0;
  let counting = true;
  const spin = () => {
    turns++;
    if (counting) setImmediate(spin);
  };
  setImmediate(spin);
  const total = await countInLane(texts);
  counting = false;
  assert.equal(
    total,
    texts.reduce((sum, t) => sum + countTextTokens(t), 0),
  );
  assert.ok(turns >= 2, `the event loop turned ${turns} times while counting`);
});

test('counting stops just past the limit', async () => {
  const text = 'a'.repeat(1_000_000); // 125,000 tokens
  const counted = await countInLane([text], 1_000);
  assert.ok(counted > 1_000 && counted <= 1_000 + maxPieceLength, String(counted));
  assert.equal(await countInLane([7, 'hello'], 5), 7, 'fixed amounts count against the limit too');
});
