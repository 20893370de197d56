// The token counter thread (TokenCounter in count.ts): counts what the serving thread sends.
// Concurrent counts share the tokenizer's lane (countInLane), so a large count delays the
// others by at most one slice at a time, as it did when counting ran on the serving thread.
import { parentPort } from 'node:worker_threads';
import type { CountAnswer, CountCall } from './count-protocol.js';
import { countInLane } from './tokenizer.js';

const port = parentPort!;
port.on('message', (call: CountCall) => {
  countInLane(call.items, call.stopAbove).then(
    (tokens) => port.postMessage({ id: call.id, tokens } satisfies CountAnswer),
    (error: unknown) =>
      port.postMessage({ id: call.id, error: error instanceof Error ? error.message : String(error) } satisfies CountAnswer),
  );
});
