import { onCluster } from './on-cluster.js';

await onCluster(() => import('../portal/budgets.test.js'));
