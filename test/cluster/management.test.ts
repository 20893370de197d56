import { onCluster } from './on-cluster.js';

await onCluster(() => import('../gateway/management.test.js'));
