import { describe, expect, test } from 'vitest';
import { AnswerTally } from './answer-tally.js';

const chunk = (content: string) =>
  JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] });

describe('AnswerTally', () => {
  test('a short stream is kept as its events and read only when asked', () => {
    const tally = new AnswerTally();
    for (const part of ['Hel', 'lo', '!']) tally.sawEvent(chunk(part));
    tally.sawEvent('[DONE]');
    // One text: its deltas counted apart would count more tokens than the text has.
    expect([...tally.items()]).toEqual(['Hello!']);
  });

  test('a long stream, read down to its text as it goes past 32 KB of events, is still the whole text', () => {
    const tally = new AnswerTally();
    const parts = Array.from({ length: 5_000 }, (_, i) => `w${i} `);
    for (const part of parts) tally.sawEvent(chunk(part));
    expect([...tally.items()]).toEqual([parts.join('')]);
  });

  test('an Anthropic stream and a whole answer', () => {
    const tally = new AnswerTally('anthropic');
    tally.sawEvent(JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }));
    expect([...tally.items()]).toEqual(['Hi']);
    const whole = new AnswerTally();
    whole.sawWhole({ choices: [{ message: { content: 'Hello there' } }] });
    expect([...whole.items()]).toEqual(['Hello there']);
  });
});
