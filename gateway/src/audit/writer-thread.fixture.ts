// A stand-in audit writer thread for writer-thread.test.ts: speaks the protocol of
// writer-thread-protocol.ts without Redis or PostgreSQL. Its consumer name picks a behaviour:
// `fail` cannot start; `crash-on-flush` exits with code 3 when asked to flush; otherwise it
// answers flush, backlog (7) and stop, and reports one written id and its lag at start.
import { parentPort, workerData } from 'node:worker_threads';
import type { WriterThreadCall, WriterThreadData, WriterThreadMessage } from './writer-thread-protocol.js';

const port = parentPort!;
const post = (message: WriterThreadMessage) => port.postMessage(message);
const { consumer } = workerData as WriterThreadData;

if (consumer === 'fail') {
  post({ kind: 'failed', error: 'connect ECONNREFUSED 127.0.0.1:5432' });
} else {
  port.on('message', (call: WriterThreadCall) => {
    if (call.op === 'flush' && consumer === 'crash-on-flush') process.exit(3);
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
