import { describe, expect, test } from 'vitest';
import { AnswerTally } from './answer-tally.js';

const chunk = (content: string) =>
  JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] });

describe('AnswerTally', () => {
  test('a short stream is kept as its events and read only when asked', () => {
    const tally = new AnswerTally();
    for (const part of ['Hel', 'lo', '!']) tally.sawEvent(chunk(part));
    tally.sawEvent('[DONE]');
    expect([...tally.items()]).toEqual(['Hel', 'lo', '!']);
  });

  test("a long stream is read down to its text as it goes: all of it counted, not every event's JSON kept", () => {
    const tally = new AnswerTally();
    const parts = Array.from({ length: 5_000 }, (_, i) => `w${i} `);
    for (const part of parts) tally.sawEvent(chunk(part));
    const items = [...tally.items()];
    expect(items.join('')).toBe(parts.join(''));
    // ~85 characters of JSON per event: read down into one string every ~390 events; only the
    // last events (fewer than 390) are still kept as they came.
    expect(items.length).toBeLessThan(5_000 / 10);
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
