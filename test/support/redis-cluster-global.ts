// vitest global set-up: with REDIS_URL (the real-services run), starts the three-master Redis
// Cluster the store-sharding suites (test/cluster/) run against, and stops it after the run.
// Without REDIS_URL (the embedded run) those suites use the memory store playing a cluster.
// SVC_TEST_REDIS_CLUSTER=0 starts none (the suites then fall back to the sharded memory store).
import type { TestProject } from 'vitest/node';
import { startRedisCluster } from './redis-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Seed URLs of the loopback Redis Cluster, comma-joined; '' when none was started. */
    redisClusterUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (!process.env.REDIS_URL || process.env.SVC_TEST_REDIS_CLUSTER === '0') {
    project.provide('redisClusterUrl', '');
    return async () => undefined;
  }
  const cluster = await startRedisCluster();
  project.provide('redisClusterUrl', cluster.url);
  return () => cluster.stop();
}
