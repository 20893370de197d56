import { ConfigError, takenPort } from '../../core/config/index.js';
import { createServer } from 'node:net';

/**
 * The variable that moves each port `npm start` listens on, with its default (0: any free port —
 * the local payment processor and the portal's metrics, which nothing needs at a fixed address).
 */
const portVariables = [
  ['PORT', 8080],
  ['PORTAL_PORT', 3000],
  ['SVC_METRICS_PORT', 9464],
  ['SIM_PORT', 8090],
  ['PAYMENTS_PORT', 0],
  ['PORTAL_METRICS_PORT', 0],
] as const;

/** A port already taken (another gateway, an earlier start): which setting moves it, not a stack trace. */
export function portInUse(error: unknown, env: NodeJS.ProcessEnv): string | undefined {
  const busy = takenPort(error);
  if (!busy) return undefined;
  const variable = portVariables.find(([name, fallback]) => Number(env[name] ?? fallback) === busy.port)?.[0];
  return (
    `npm start: port ${busy.port} on ${busy.address ?? '127.0.0.1'} is already in use (another gateway, or an earlier npm start). ` +
    (variable ? `Set ${variable} to a free port` : `Set the ports to free ones`) +
    `: ${portVariables.map(([name, fallback]) => `${name} (default ${fallback || 'any free port'})`).join(', ')}.`
  );
}

/**
 * A port `npm start` takes from `name` (PAYMENTS_PORT, PORTAL_METRICS_PORT), or undefined when it is
 * not set; anything but a whole number from 0 to 65535 stops the start, naming the variable.
 */
export function portSetting(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const text = env[name];
  if (text === undefined || text === '') return undefined;
  const port = Number(text);
  if (!/^\d{1,5}$/.test(text.trim()) || port > 65_535)
    throw new ConfigError(`${name} must be a port number from 0 to 65535 (0: any free port), not '${text}'`);
  return port;
}

/**
 * Fails fast when a fixed port `npm start` will listen on is taken: each is bound for a moment on
 * `host` before the database is opened (a first start creates it, which takes a while) — the
 * error is the one listen gives, so portInUse names its variable. A port taken in the moment
 * between this check and the real listen still fails there, with the same message.
 */
export async function assertPortsFree(env: NodeJS.ProcessEnv, host: string): Promise<void> {
  for (const [name, fallback] of portVariables) {
    // 0 (any free port) and values the start refuses elsewhere (portSetting, the settings) are not probed.
    const port = Number(env[name] ?? fallback);
    if (!Number.isInteger(port) || port <= 0 || port > 65_535) continue;
    await new Promise<void>((resolve, reject) => {
      const probe = createServer();
      probe.once('error', reject);
      probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
    });
  }
}
