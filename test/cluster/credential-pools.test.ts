import { onCluster } from './on-cluster.js';

await onCluster(() => import('../gateway/credential-pools.test.js'));
