// vitest global set-up: with REDIS_URL (the real-services run), starts the three-master Redis
// Cluster the store-sharding suites (test/cluster/) run against, and stops it after the run.
// Without REDIS_URL (the embedded run) those suites use the memory store playing a cluster, as
// they do with SVC_TEST_REDIS_CLUSTER=0, or when this machine has no redis-server outside CI
// (said on the console; on CI a missing redis-server fails the run).
import { spawnSync } from 'node:child_process';
import type { TestProject } from 'vitest/node';
import { startRedisCluster } from './redis-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Seed URLs of the loopback Redis Cluster, comma-joined; '' when none was started. */
    redisClusterUrl: string;
  }
}

function redisServerInstalled(): boolean {
  return !spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).error;
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const none = async () => undefined;
  if (!process.env.REDIS_URL || process.env.SVC_TEST_REDIS_CLUSTER === '0') {
    project.provide('redisClusterUrl', '');
    return none;
  }
  if (!redisServerInstalled()) {
    if (process.env.CI) throw new Error('redis-server is not installed: the store-sharding suites need it to start a Redis Cluster');
    console.warn('redis-server is not installed: test/cluster runs on the memory store playing a cluster, not on a real one');
    project.provide('redisClusterUrl', '');
    return none;
  }
  const cluster = await startRedisCluster();
  project.provide('redisClusterUrl', cluster.url);
  return () => cluster.stop();
}
