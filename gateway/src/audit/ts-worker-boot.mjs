// Runs a TypeScript worker module from source (npm run gateway, tests): worker threads do not
// inherit the main thread's tsx loader, so the worker registers it and imports its entry. The
// image runs the compiled .js worker directly and never loads this file.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
