import type { Store } from '../store/types.js';

/** Pub/sub channel on which the operator announces that region policies changed (message: the policy name). */
export const regionPolicyChannel = 'region-policies:changed';

/** Tells every gateway replica to reload the region policies. */
export async function announceRegionPolicyChange(store: Store, name: string): Promise<void> {
  await store.publish(regionPolicyChannel, name);
}
