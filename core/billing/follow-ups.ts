// What a committed billing change still has to tell people: an activity entry, an email to a
// user. Collected inside the transaction and carried out after the commit, so a failed email
// never undoes money that moved, and money that did not move is never announced.
import type { NewActivity } from '../activity/index.js';

export type FollowUp =
  | { kind: 'activity'; entry: NewActivity }
  | { kind: 'email'; userId: number; subject: string; text: string; path: string }
  /** A card was saved through hosted setup: make it the default when the payer has none. */
  | { kind: 'card_saved'; payerId: string; setupIntentId: string };

/** Carries out follow-ups; failures are the carrier's to log, never the caller's to handle. */
export interface FollowUpCarrier {
  activity(entry: NewActivity): Promise<void>;
  email(userId: number, message: { subject: string; text: string; path: string }): Promise<void>;
}

/** The activity follow-up for a payment's user; none when the payment has no user (made at the processor). */
export function activityFollowUp(userId: number | null, entry: Omit<NewActivity, 'userId'>): FollowUp[] {
  return userId === null ? [] : [{ kind: 'activity', entry: { ...entry, userId } as NewActivity }];
}
