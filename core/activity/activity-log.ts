// The account activity log: one row per thing that happened to a portal account, written by the
// portal action that did it, read newest first by /dashboard/activity (and by administrators).
import type { Knex } from 'knex';

/** What can happen in an account; new portal actions add their kind here. */
export const activityKinds = [
  'signed_in',
  'key_created',
  'key_updated',
  'key_suspended',
  'key_resumed',
  'key_revoked',
  'terms_accepted',
  'language_changed',
  'profile_changed',
  'password_changed',
  // An identity provider was linked to an account already in use (portal/src/features/sso).
  'sso_linked',
  'sso_unlinked',
  'sso_allowed',
  // Billing (core/billing): money in and out of the account's wallet, cards, automatic top-up.
  'payment_succeeded',
  'payment_refunded',
  'payment_failed',
  'payment_method_saved',
  'payment_method_removed',
  'auto_topup_changed',
  'organisation_billing_changed',
  // The autorouter (core/autorouter): a user's, key's or organisation's policy for `auto`.
  'autorouter_changed',
  // Administration (core/identity/administration.ts): role, status, department, organisation.
  'account_administered',
  'invite_accepted',
  // Promotions (core/promotions): a platform administrator credited the wallet.
  'promotion_granted',
  // Projects (core/projects): created, members added or removed.
  'project_created',
  'project_member_added',
  'project_member_removed',
  // Budget policies (core/budgets).
  'budget_policy_activated',
] as const;

/** One kind of activity. */
export type ActivityKind = (typeof activityKinds)[number];

/** An entry to record. */
export interface NewActivity {
  /** The account it happened to. */
  userId: number;
  /** Who did it, when not the account's own user (an administrator); null otherwise. */
  actorUserId?: number | null;
  kind: ActivityKind;
  /** One sentence a person reads ("Signed in with Company SSO"); never a secret. */
  summary: string;
  details?: Record<string, string | number | boolean | null>;
}

/** A recorded entry. */
export interface Activity {
  id: number;
  userId: number;
  actorUserId: number | null;
  kind: ActivityKind;
  summary: string;
  details: Record<string, unknown>;
  createdAt: string;
}

interface ActivityRow {
  id: string | number;
  user_id: number;
  actor_user_id: number | null;
  kind: ActivityKind;
  summary: string;
  details: Record<string, unknown>;
  created_at: Date;
}

/** Activity rows in PostgreSQL. */
export class ActivityLog {
  constructor(private readonly knex: Knex) {}

  /** Records one entry at `now`. */
  async record(entry: NewActivity, now: Date): Promise<void> {
    await this.knex('portal_activity').insert({
      user_id: entry.userId,
      actor_user_id: entry.actorUserId ?? null,
      kind: entry.kind,
      summary: entry.summary.slice(0, 500),
      details: JSON.stringify(entry.details ?? {}),
      created_at: now,
    });
  }

  /** A page of one account's activity, newest first; `before` is the last id of the previous page. */
  async listForUser(userId: number, page: { limit: number; before?: number }): Promise<{ data: Activity[]; nextBefore: number | null }> {
    let query = this.knex<ActivityRow>('portal_activity').where({ user_id: userId });
    if (page.before !== undefined) query = query.andWhere('id', '<', page.before);
    const rows = (await query.orderBy('id', 'desc').limit(page.limit + 1)) as ActivityRow[];
    const data = rows.slice(0, page.limit).map((r) => ({
      id: Number(r.id),
      userId: r.user_id,
      actorUserId: r.actor_user_id,
      kind: r.kind,
      summary: r.summary,
      details: r.details,
      createdAt: new Date(r.created_at).toISOString(),
    }));
    return { data, nextBefore: rows.length > page.limit ? (data.at(-1)?.id ?? null) : null };
  }
}
