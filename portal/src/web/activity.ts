// Records an account activity entry for a portal action. The action has already happened, so a
// failed write is logged and never turned into an error for the person who did it.
import type { NewActivity } from '../../../core/activity/index.js';
import type { PortalDeps } from '../deps.js';

/** Writes `entry` to the activity log; failures are logged, not thrown. */
export async function noteActivity(deps: Pick<PortalDeps, 'activity' | 'clock' | 'logger'>, entry: NewActivity): Promise<void> {
  try {
    await deps.activity.record(entry, new Date(deps.clock()));
  } catch (error) {
    deps.logger.warn({ err: error, kind: entry.kind, userId: entry.userId }, 'activity not recorded');
  }
}
