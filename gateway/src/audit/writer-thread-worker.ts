// The audit writer thread: reads the audit stream and writes it to PostgreSQL with its own
// connections, so none of that work (stream reads, JSON parsing, batch inserts) runs on the
// event loop that serves requests. Started by writer-thread.ts.
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from '../../../core/telemetry/index.js';
import { openOwnAuditWriter } from './open-writer.js';
import type { WriterThreadCall, WriterThreadData, WriterThreadMessage } from './writer-thread-protocol.js';

const port = parentPort!;
const post = (message: WriterThreadMessage) => port.postMessage(message);
const { settings, consumer } = workerData as WriterThreadData;
const logger = createLogger({ service: 'gateway', level: settings.LOG_LEVEL }).child({ thread: 'audit-writer' });

try {
  const own = await openOwnAuditWriter(settings, {
    consumer,
    logger,
    onWritten: (records) => post({ kind: 'written', requestIds: records.map((r) => r.requestId) }),
  });
  const lag = setInterval(() => post({ kind: 'lag', seconds: own.writer.lagSeconds() }), 500);
  port.on('message', (call: WriterThreadCall) => {
    const answer = async (): Promise<number | undefined> => {
      switch (call.op) {
        case 'flush':
          await own.writer.flush();
          return undefined;
        case 'backlog':
          return own.writer.backlog();
        case 'stop':
          clearInterval(lag);
          await own.close();
          await new Promise<void>((resolve) => logger.flush(() => resolve()));
          return undefined;
      }
    };
    answer().then(
      (value) => post({ kind: 'reply', id: call.id, ...(value !== undefined && { value }) }),
      (error: unknown) => post({ kind: 'reply', id: call.id, error: error instanceof Error ? error.message : String(error) }),
    );
  });
  post({ kind: 'ready' });
} catch (error) {
  post({ kind: 'failed', error: error instanceof Error ? error.message : String(error) });
}
