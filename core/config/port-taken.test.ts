import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { ConfigError } from './settings.js';
import { startFailure, takenPort } from './port-taken.js';

const open: Server[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** The error a listen on a port another server holds fails with. */
async function listenOnTakenPort(): Promise<{ port: number; error: unknown }> {
  const holder = createServer();
  open.push(holder);
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const { port } = holder.address() as AddressInfo;
  const second = createServer();
  const error = await new Promise((resolve) => {
    second.once('error', resolve);
    second.listen(port, '127.0.0.1');
  });
  return { port, error };
}

test('a taken port is named with the setting that moves it, in one line', async () => {
  const { port, error } = await listenOnTakenPort();
  expect(takenPort(error)).toEqual({ port, address: '127.0.0.1' });
  expect(takenPort(new Error('wrapped', { cause: error }))).toEqual({ port, address: '127.0.0.1' });
  expect(
    startFailure(error, 'gateway', [
      ['PORT', port],
      ['SVC_METRICS_PORT', 9464],
    ]),
  ).toBe(`gateway: port ${port} on 127.0.0.1 is already in use (another gateway or program); set PORT to a free port`);
  // A port none of the settings names (an ephemeral one): every setting is named.
  expect(startFailure(error, 'portal', [['PORTAL_PORT', 1]])).toMatch(/set PORTAL_PORT to a free port$/);
});

test('a configuration error is one line; anything else is printed as thrown', () => {
  expect(startFailure(new ConfigError('PORT: must be a port'), 'gateway', [])).toBe('configuration error: PORT: must be a port');
  const other = new Error('boom');
  expect(startFailure(other, 'gateway', [['PORT', 8080]])).toBe(other);
  expect(takenPort(other)).toBeUndefined();
});
