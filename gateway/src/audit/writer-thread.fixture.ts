// A stand-in audit writer thread for writer-thread.test.ts: speaks the protocol of
// writer-thread-protocol.ts without Redis or PostgreSQL. Its consumer name picks a behaviour:
// `fail` cannot start; `crash-on-flush` exits with code 3 when asked to flush; `flaky-restart`
// does that too, and its second start (counted in SVC_DATA_DIR) fails; otherwise it answers
// flush, backlog (7) and stop, and reports one written id and its lag at start.
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import type { WriterThreadCall, WriterThreadData, WriterThreadMessage } from './writer-thread-protocol.js';

const port = parentPort!;
const post = (message: WriterThreadMessage) => port.postMessage(message);
const { consumer, settings } = workerData as WriterThreadData;

/** Which start of the thread this is (1, 2, …), for `flaky-restart`. */
function startNumber(): number {
  const file = join(settings.SVC_DATA_DIR, 'fixture-starts');
  appendFileSync(file, 'x');
  return readFileSync(file, 'utf8').length;
}

if (consumer === 'fail' || (consumer === 'flaky-restart' && startNumber() === 2)) {
  post({ kind: 'failed', error: 'connect ECONNREFUSED 127.0.0.1:5432' });
} else {
  port.on('message', (call: WriterThreadCall) => {
    if (call.op === 'flush' && (consumer === 'crash-on-flush' || consumer === 'flaky-restart')) process.exit(3);
    if (call.op === 'backlog') return post({ kind: 'reply', id: call.id, value: 7 });
    if (call.op === 'stop') {
      post({ kind: 'reply', id: call.id });
      return port.close();
    }
    post({ kind: 'reply', id: call.id });
  });
  post({ kind: 'ready' });
  post({ kind: 'written', requestIds: ['req_fixture'] });
  post({ kind: 'lag', seconds: 1.5 });
}
