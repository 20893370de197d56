// CLI entry (`npm run sim`): runs one simulator until SIGTERM/SIGINT.
// Env: SIM_HOST (127.0.0.1), SIM_PORT (8090), SIM_NAME, SIM_API_KEY, SIM_LATENCY_MS.
import { startSimulator } from './server.js';

const latency = Number(process.env.SIM_LATENCY_MS ?? '');
const sim = await startSimulator({
  host: process.env.SIM_HOST || '127.0.0.1',
  port: Number(process.env.SIM_PORT || 8090),
  name: process.env.SIM_NAME || 'sim',
  apiKey: process.env.SIM_API_KEY || undefined,
  faults: Number.isFinite(latency) && latency > 0 ? { latencyMs: latency } : undefined,
});
console.log(`supplier simulator "${sim.name}" listening on ${sim.url} (endpoints under ${sim.url}/v1)`);

let stopping = false;
const stop = (signal: string): void => {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: closing simulator`);
  void sim.close().then(() => process.exit(0));
};
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
