import { onCluster } from './on-cluster.js';

await onCluster(() => import('../../core/budget/scripts.test.js'));
