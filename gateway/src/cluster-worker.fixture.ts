// A stand-in gateway worker for cluster.test.ts: listens on the shared port, answers with its
// pid, counts one start in its own metrics registry, and drains on SIGTERM as a gateway does.
import { createServer } from 'node:http';
import { Counter, Registry } from 'prom-client';
import { reportMetricsToPrimary } from './cluster.js';

const registry = new Registry();
new Counter({ name: 'fixture_worker_starts_total', help: 'Starts of this worker', registers: [registry] }).inc();
const server = createServer((_request, response) => response.end(String(process.pid)));
server.listen(Number(process.env.FIXTURE_PORT), '127.0.0.1', () => reportMetricsToPrimary(registry));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
