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

/**
 * An administrator's change to a user's account, in that user's activity: `what` happened, "by"
 * whom when another made it; one's own change (stepping down a role, say) names no actor.
 */
export function noteAdministered(
  deps: Pick<PortalDeps, 'activity' | 'clock' | 'logger'>,
  actorUserId: number,
  userId: number,
  what: string,
  details: Record<string, string | number | boolean | null>,
  by = 'an administrator',
): Promise<void> {
  const own = actorUserId === userId;
  return noteActivity(deps, {
    userId,
    actorUserId: own ? null : actorUserId,
    kind: 'account_administered',
    summary: own ? what : `${what} by ${by}`,
    details,
  });
}
