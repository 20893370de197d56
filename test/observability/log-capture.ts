// A gateway logger (the production factory, redaction included) writing into memory.
import { Writable } from 'node:stream';
import type { Logger } from 'pino';
import { createLogger } from '../../core/telemetry/index.js';

/** Captured JSON lines, raw and parsed. */
export interface CapturedLogs {
  logger: Logger;
  text(): string;
  lines(): Record<string, unknown>[];
}

/** A redacting logger like the gateway's own whose lines stay in memory. */
export function captureLogs(options: { logPromptContent?: boolean } = {}): CapturedLogs {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const logger = createLogger({ service: 'gateway', level: 'info', logPromptContent: options.logPromptContent ?? false, destination });
  return {
    logger,
    text: () => chunks.join(''),
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
