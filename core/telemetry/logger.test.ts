import { onTestFinished, test } from 'vitest';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { accessLoggerOf, createLogger, redactedMarker } from './logger.js';

/** A logger writing into an array of parsed lines. */
function capture(logPromptContent: boolean) {
  const lines: Record<string, any>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  return { lines, logger: createLogger({ service: 'test', level: 'info', logPromptContent, destination }) };
}

test('logger: credentials are redacted wherever a headers object or secret field appears', () => {
  const { lines, logger } = capture(true);
  logger.info(
    {
      headers: { authorization: 'Bearer sk-live-abc', 'x-api-key': 'sk-ant-xyz', cookie: 'sid=1', accept: 'application/json' },
      req: { headers: { authorization: 'Bearer sk-live-abc' } },
      supplier: { apiKey: 'supplier-secret', name: 'sim-eu' },
      secret: 'plain-secret',
    },
    'line',
  );
  const text = JSON.stringify(lines);
  for (const secret of ['sk-live-abc', 'sk-ant-xyz', 'sid=1', 'supplier-secret', 'plain-secret']) {
    assert.ok(!text.includes(secret), `${secret} must not be logged: ${text}`);
  }
  assert.equal(lines[0]!.headers.accept, 'application/json', 'harmless headers stay');
  assert.equal(lines[0]!.headers.authorization, redactedMarker, 'the redaction is visible');
  assert.equal(lines[0]!.service, 'test', 'every line names its service');
});

test('logger: prompt text is redacted unless prompt logging is enabled', () => {
  const entry = { prompt: { messages: [{ role: 'user', content: 'my private question' }] }, request_id: 'req_1' };
  const off = capture(false);
  off.logger.info(entry, 'request');
  assert.ok(!JSON.stringify(off.lines).includes('my private question'), 'prompt text hidden by default');
  assert.equal(off.lines[0]!.request_id, 'req_1', 'the rest of the line stays');
  const on = capture(true);
  on.logger.info(entry, 'request');
  assert.ok(JSON.stringify(on.lines).includes('my private question'), 'prompt text logged when enabled');
});

test('access logger: same destination, level and service, no redaction pass; the redacting logger when prompts are logged', () => {
  const { lines, logger } = capture(false);
  const access = accessLoggerOf(logger, false);
  assert.notEqual(access, logger, 'a separate logger');
  access.info({ request_id: 'req_1', input: 'a count, not a prompt' }, 'request');
  access.debug({ request_id: 'req_2' }, 'below the level');
  assert.equal(lines.length, 1, 'one line, at the same level');
  assert.equal(lines[0]!.service, 'test', 'same base fields');
  assert.equal(lines[0]!.input, 'a count, not a prompt', 'no redaction on the access line');
  const prompts = capture(true);
  assert.equal(accessLoggerOf(prompts.logger, true), prompts.logger, 'with prompt logging on, the access line keeps redaction');
});

/** Runs the stdout fixture; resolves its parsed lines once `until` holds (or it exits). */
function runFixture(mode: 'exit' | 'wait', until: (lines: Record<string, unknown>[]) => boolean) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'core/telemetry/logger-stdout.fixture.ts'], {
    env: { ...process.env, LOGGER_FIXTURE: mode },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  onTestFinished(() => void child.kill());
  let text = '';
  const parsed = () =>
    text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return new Promise<{ lines: Record<string, unknown>[]; exited: boolean }>((resolve, reject) => {
    child.once('error', reject);
    child.stdout.on('data', (d: Buffer) => {
      text += d.toString();
      if (until(parsed())) {
        child.stdin.end();
        resolve({ lines: parsed(), exited: false });
      }
    });
    child.once('exit', () => resolve({ lines: parsed(), exited: true }));
  });
}

test('buffered stdout: lines of a process that exits at once are all written (flushed at exit)', async () => {
  const { lines } = await runFixture('exit', () => false);
  assert.deepEqual(
    lines.map((l) => l.msg),
    ['first line', 'second line'],
  );
});

test('buffered stdout: lines far below the 4 KiB chunk still appear while the process runs (the periodic flush)', async () => {
  const { lines, exited } = await runFixture('wait', (l) => l.length >= 2);
  assert.equal(exited, false, 'the lines came before the process ended');
  assert.deepEqual(
    lines.map((l) => l.msg),
    ['first line', 'second line'],
  );
});
