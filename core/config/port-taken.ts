import { ConfigError } from './settings.js';

/** The ports a deployable listens on, each with the setting that moves it. */
export type ListenPorts = readonly (readonly [setting: string, port: number])[];

/** The port and address of a listen refused because the port is taken (EADDRINUSE, also as a cause); undefined for anything else. */
export function takenPort(error: unknown): { port: number | undefined; address: string | undefined } | undefined {
  const failure = error instanceof Error ? ((error.cause as NodeJS.ErrnoException | undefined) ?? error) : undefined;
  const busy = failure as (NodeJS.ErrnoException & { port?: number; address?: string }) | undefined;
  if (busy?.code !== 'EADDRINUSE') return undefined;
  return { port: busy.port, address: busy.address };
}

/**
 * What a deployable's entry point prints when its start fails: a configuration error, or a port
 * another program holds named with the setting that moves it (a raw EADDRINUSE stack trace named
 * neither: outside probe, another gateway on the same machine), in one line; anything else as thrown.
 */
export function startFailure(error: unknown, who: string, ports: ListenPorts): unknown {
  if (error instanceof ConfigError) return `configuration error: ${error.message}`;
  const taken = takenPort(error);
  if (!taken) return error;
  const setting = ports.find(([, port]) => port === taken.port)?.[0];
  return (
    `${who}: port ${taken.port} on ${taken.address ?? 'this host'} is already in use (another gateway or program); ` +
    `set ${setting ?? ports.map(([name]) => name).join(' or ')} to a free port`
  );
}
