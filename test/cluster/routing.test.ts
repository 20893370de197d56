import { onCluster } from './on-cluster.js';

await onCluster(() => import('../gateway/routing.test.js'));
