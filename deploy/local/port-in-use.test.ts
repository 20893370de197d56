import { createServer } from 'node:net';
import { describe, expect, test } from 'vitest';
import { assertPortsFree, portInUse, portSetting } from './port-in-use.js';

/** The error Node gives for a port another process holds. */
async function listenError(port: number): Promise<unknown> {
  const second = createServer();
  return new Promise((resolve) => {
    second.once('error', resolve);
    second.listen(port, '127.0.0.1', () => second.close(() => resolve(undefined)));
  });
}

describe('npm start on a port already taken', () => {
  test('names the port and the variable that moves it, also when the error is the cause of another', async () => {
    const held = createServer();
    await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
    const port = (held.address() as { port: number }).port;
    try {
      const error = await listenError(port);
      const message = portInUse(error, { PORTAL_PORT: String(port) });
      expect(message).toContain(`port ${port} on 127.0.0.1 is already in use`);
      expect(message).toContain('Set PORTAL_PORT to a free port');
      expect(portInUse(new Error('cannot start the simulator', { cause: error }), { SIM_PORT: String(port) })).toContain('Set SIM_PORT');
      expect(portInUse(error, {})).toContain('Set the ports to free ones');
      expect(portInUse(error, { PAYMENTS_PORT: String(port) })).toContain('Set PAYMENTS_PORT to a free port');
      expect(portInUse(error, { PORTAL_METRICS_PORT: String(port) })).toContain('PORTAL_METRICS_PORT (default any free port)');
    } finally {
      await new Promise((resolve) => held.close(resolve));
    }
  });

  test('any other error is left as it is', () => {
    expect(portInUse(new Error('boom'), {})).toBeUndefined();
    expect(portInUse('text', {})).toBeUndefined();
  });

  test('PAYMENTS_PORT and PORTAL_METRICS_PORT: unset is undefined, a port is read, anything else names the variable', () => {
    expect(portSetting({}, 'PAYMENTS_PORT')).toBeUndefined();
    expect(portSetting({ PAYMENTS_PORT: '' }, 'PAYMENTS_PORT')).toBeUndefined();
    expect(portSetting({ PAYMENTS_PORT: '47211' }, 'PAYMENTS_PORT')).toBe(47211);
    expect(portSetting({ PORTAL_METRICS_PORT: '0' }, 'PORTAL_METRICS_PORT')).toBe(0);
    for (const bad of ['abc', '-1', '65536', '80.5', '1e3'])
      expect(() => portSetting({ PAYMENTS_PORT: bad }, 'PAYMENTS_PORT')).toThrow(`PAYMENTS_PORT must be a port number from 0 to 65535`);
  });

  test('a taken port is found before anything starts, and named by its variable', async () => {
    const held = createServer();
    await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
    const port = (held.address() as { port: number }).port;
    // Every other port any free one (0 is not checked): only the held one can fail.
    const free = { PORT: '0', PORTAL_PORT: '0', SVC_METRICS_PORT: '0', SIM_PORT: '0' };
    try {
      await expect(assertPortsFree(free, '127.0.0.1')).resolves.toBeUndefined();
      for (const name of ['PORTAL_PORT', 'PAYMENTS_PORT'] as const) {
        const env = { ...free, [name]: String(port) };
        const error = await assertPortsFree(env, '127.0.0.1').then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(portInUse(error, env)).toContain(`Set ${name} to a free port`);
      }
    } finally {
      await new Promise((resolve) => held.close(resolve));
    }
    // Released: the same port passes now.
    await expect(
      assertPortsFree({ PORT: String(port), PORTAL_PORT: '0', SVC_METRICS_PORT: '0', SIM_PORT: '0' }, '127.0.0.1'),
    ).resolves.toBeUndefined();
  });
});
