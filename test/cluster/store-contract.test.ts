import { onCluster } from './on-cluster.js';

await onCluster(() => import('../../core/store/store.contract.test.js'));
