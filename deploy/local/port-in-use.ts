/** The variable that moves each port `npm start` listens on, with its default. */
const portVariables = [
  ['PORT', 8080],
  ['PORTAL_PORT', 3000],
  ['SVC_METRICS_PORT', 9464],
  ['SIM_PORT', 8090],
] as const;

/** A port already taken (another gateway, an earlier start): which setting moves it, not a stack trace. */
export function portInUse(error: unknown, env: NodeJS.ProcessEnv): string | undefined {
  const failure = error instanceof Error ? ((error.cause as NodeJS.ErrnoException | undefined) ?? error) : undefined;
  const busy = failure as (NodeJS.ErrnoException & { port?: number; address?: string }) | undefined;
  if (busy?.code !== 'EADDRINUSE') return undefined;
  const variable = portVariables.find(([name, fallback]) => Number(env[name] ?? fallback) === busy.port)?.[0];
  return (
    `npm start: port ${busy.port} on ${busy.address ?? '127.0.0.1'} is already in use (another gateway, or an earlier npm start). ` +
    (variable ? `Set ${variable} to a free port` : `Set the ports to free ones`) +
    `: ${portVariables.map(([name, fallback]) => `${name} (default ${fallback})`).join(', ')}.`
  );
}
