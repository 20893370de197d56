import { onCluster } from './on-cluster.js';

await onCluster(() => import('../../gateway/src/enforcement/enforce.test.js'));
