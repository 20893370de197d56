// The store-sharding suites: existing suites run again with SVC_REDIS_CLUSTER, against the
// loopback Redis Cluster of the real-services run (test/support/redis-cluster-global.ts) or, on
// the embedded defaults, against the memory store refusing cross-shard scripts as a cluster does.
// Each file here sets the environment, then loads one suite, whose stores (core/store/testing.ts)
// and harnesses read it.
import { inject } from 'vitest';

/** Points the store at the cluster (or the sharded memory store), then loads the suite. */
export async function onCluster(load: () => Promise<unknown>): Promise<void> {
  const url = inject('redisClusterUrl');
  if (url) process.env.REDIS_URL = url;
  else delete process.env.REDIS_URL;
  process.env.SVC_REDIS_CLUSTER = 'true';
  await load();
}
