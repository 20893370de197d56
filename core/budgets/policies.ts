// Budget policies and alerts (docs/budgets.md): a monthly amount for one user or, set by its
// administrators, an organisation, with alert thresholds (per cent of the amount) and an optional
// hard stop — the gateway's spend-group cap (core/budget/spend-groups.ts), so the stop is as
// exact as every other budget. Alerts are computed from the usage rollup (equal to the audit log)
// by one job; each policy, month, threshold and recipient is a unique row, so an alert is sent
// once however many workers evaluate at once, and only to recipients who consented.
import type { Knex } from 'knex';
import { administeredCapNano, republishSpendGroupCap, spendGroupMonthSpend, type SpendGroup } from '../budget/spend-groups.js';
import { toNano } from '../budget/usage.js';
import { ApiError } from '../errors/index.js';
import type { Store } from '../store/index.js';

export type PolicyScope = 'user' | 'organisation';

export interface BudgetPolicy {
  policy_id: number;
  scope: PolicyScope;
  user_id: number | null;
  organisation_id: number | null;
  amount_usd: number;
  thresholds: number[];
  hard_stop: boolean;
  created_at: string;
}

interface PolicyRow {
  id: number;
  scope: PolicyScope;
  user_id: number | null;
  organisation_id: number | null;
  amount_usd: string;
  thresholds: number[] | string;
  hard_stop: boolean;
  created_at: Date;
}

const present = (r: PolicyRow): BudgetPolicy => ({
  policy_id: r.id,
  scope: r.scope,
  user_id: r.user_id,
  organisation_id: r.organisation_id,
  amount_usd: Number(r.amount_usd),
  thresholds: typeof r.thresholds === 'string' ? (JSON.parse(r.thresholds) as number[]) : r.thresholds,
  hard_stop: r.hard_stop,
  created_at: new Date(r.created_at).toISOString(),
});

const groupOf = (scope: PolicyScope, subjectId: number): SpendGroup => ({ scope, id: subjectId });

/** The active policies of a user and of their organisation. */
export async function activePolicies(knex: Knex, userId: number, organisationId: number | null): Promise<BudgetPolicy[]> {
  const rows = (await knex('budget_policies')
    .where({ active: true })
    .andWhere((w) => {
      w.where({ scope: 'user', user_id: userId });
      if (organisationId !== null) w.orWhere({ scope: 'organisation', organisation_id: organisationId });
    })
    .orderBy('id')) as PolicyRow[];
  return rows.map(present);
}

/**
 * Activates a policy for the subject, replacing its previous one. With `hardStop` the amount is
 * also a monthly cap at the gateway — one that can only lower the cap administrators set
 * (users.monthly_budget_usd, organisations.monthly_budget), never lift it: a hard stop above it
 * is refused (403), and the gateway applies the lower of the two (spendGroupCapNano). Replacing
 * a hard stop with a policy without one gives the administrators' cap back. The cap the gateways
 * apply is written to the store at once.
 */
export async function activatePolicy(
  knex: Knex,
  store: Store,
  input: { scope: PolicyScope; subjectId: number; amountUsd: number; thresholds: number[]; hardStop: boolean; createdBy: number },
  onStoreError: (error: unknown) => void,
): Promise<BudgetPolicy> {
  const group = groupOf(input.scope, input.subjectId);
  const row = await knex.transaction(async (trx) => {
    if (input.hardStop) {
      const administered = await administeredCapNano(trx, group);
      if (administered >= 0 && toNano(input.amountUsd) > administered) {
        throw new ApiError('forbidden', {
          humanMessage:
            `A hard stop can only lower the monthly budget an administrator set (${administered / 1e9} USD), not raise it: ` +
            'choose an amount up to it, or turn the hard stop off to be alerted only',
        });
      }
    }
    const subject = input.scope === 'user' ? { user_id: input.subjectId } : { organisation_id: input.subjectId };
    await trx('budget_policies')
      .where({ scope: input.scope, active: true, ...subject })
      .update({ active: false });
    const [inserted] = (await trx('budget_policies')
      .insert({
        scope: input.scope,
        ...subject,
        amount_usd: input.amountUsd.toFixed(6),
        thresholds: JSON.stringify([...new Set(input.thresholds)].sort((a, b) => a - b)),
        hard_stop: input.hardStop,
        created_by: input.createdBy,
      })
      .returning('*')) as PolicyRow[];
    return inserted!;
  });
  // Also without a hard stop: the policy replaced may have had one.
  await republishSpendGroupCap(knex, store, group, onStoreError);
  return present(row);
}

/** Records the user's consent to budget alerts (or its withdrawal). */
export async function setAlertConsent(knex: Knex, userId: number, consented: boolean, now: Date): Promise<void> {
  await knex('budget_alert_consents').insert({ user_id: userId, consented, updated_at: now }).onConflict('user_id').merge();
}

export async function hasAlertConsent(knex: Knex, userId: number): Promise<boolean> {
  const row = (await knex('budget_alert_consents').where({ user_id: userId }).first('consented')) as { consented: boolean } | undefined;
  return row?.consented ?? false;
}

/** One alert delivery as the history shows it. */
export interface AlertView {
  alert_id: number;
  policy_id: number;
  scope: PolicyScope;
  period: string;
  threshold: number;
  spent_usd: number;
  amount_usd: number;
  state: 'queued' | 'sent' | 'failed';
  reason: string | null;
  created_at: string;
  sent_at: string | null;
}

/**
 * The caller's own alert deliveries, newest first, `limit` at most, before `beforeId` when that
 * is one of the caller's (another user's id is ignored, silently: it reveals nothing). Read only.
 */
export async function alertHistory(
  knex: Knex,
  userId: number,
  page: { beforeId?: number | undefined; limit: number },
): Promise<{ data: AlertView[]; next_before_id: number | null }> {
  let q = knex('budget_alerts as a')
    .join('budget_policies as p', 'p.id', 'a.policy_id')
    .where('a.recipient_user_id', userId)
    .select('a.*', 'p.scope');
  if (page.beforeId !== undefined) {
    const mine = await knex('budget_alerts').where({ id: page.beforeId, recipient_user_id: userId }).first('id');
    if (mine) q = q.andWhere('a.id', '<', page.beforeId);
  }
  const rows = (await q.orderBy('a.id', 'desc').limit(page.limit + 1)) as (Record<string, unknown> & { id: string | number })[];
  const shown = rows.slice(0, page.limit);
  return {
    data: shown.map((r) => ({
      alert_id: Number(r.id),
      policy_id: Number(r.policy_id),
      scope: r.scope as PolicyScope,
      period: r.period as string,
      threshold: Number(r.threshold),
      spent_usd: Number(r.spent_usd),
      amount_usd: Number(r.amount_usd),
      state: r.state as AlertView['state'],
      reason: (r.reason as string | null) ?? null,
      created_at: new Date(r.created_at as string).toISOString(),
      sent_at: r.sent_at ? new Date(r.sent_at as string).toISOString() : null,
    })),
    next_before_id: rows.length > page.limit ? Number(shown.at(-1)!.id) : null,
  };
}

/** A new alert to deliver. */
export interface DueAlert {
  alertId: number;
  policyId: number;
  recipientUserId: number;
  email: string;
  scope: PolicyScope;
  subjectName: string;
  threshold: number;
  spentUsd: number;
  amountUsd: number;
}

/** Who an organisation policy alerts: its org admins and its billing user (who pays). */
async function recipientsOf(knex: Knex, policy: BudgetPolicy): Promise<{ id: number; email: string }[]> {
  const q = knex('users as u')
    .join('budget_alert_consents as c', 'c.user_id', 'u.id')
    .where('c.consented', true)
    .andWhere('u.status', 'active')
    .whereNull('u.deleted_at');
  if (policy.scope === 'user')
    return (await q.andWhere('u.id', policy.user_id!).select('u.id', 'u.email')) as { id: number; email: string }[];
  return (await q
    .andWhere('u.organisation_id', policy.organisation_id!)
    .andWhere((w) =>
      w
        .where('u.role', 'org_admin')
        .orWhereIn('u.id', knex('organisations').select('billing_user_id').where({ id: policy.organisation_id! })),
    )
    .select('u.id', 'u.email')) as { id: number; email: string }[];
}

/**
 * Whether this month's alert for the threshold already went to the recipient under an earlier
 * version of the same policy (same subject, same amount): saving a policy again replaces its row,
 * and without this every threshold already crossed was announced a second time.
 */
async function alertedUnderAnotherVersion(
  knex: Knex,
  policy: BudgetPolicy,
  subjectId: number,
  period: string,
  threshold: number,
  recipientUserId: number,
): Promise<boolean> {
  const row = await knex('budget_alerts as a')
    .join('budget_policies as p', 'p.id', 'a.policy_id')
    .where({ 'p.scope': policy.scope, [policy.scope === 'user' ? 'p.user_id' : 'p.organisation_id']: subjectId })
    .whereNot('p.id', policy.policy_id)
    .where({ 'a.period': period, 'a.threshold': threshold, 'a.recipient_user_id': recipientUserId })
    .whereRaw('a.amount_usd = ?::numeric', [policy.amount_usd.toFixed(6)])
    .first('a.id');
  return row !== undefined;
}

/**
 * Every threshold an active policy's month has crossed, for each consenting recipient, recorded
 * once (a row per policy, month, threshold and recipient): returns only the rows this call
 * created, to be delivered by the caller.
 */
export async function claimDueAlerts(knex: Knex, now: Date): Promise<DueAlert[]> {
  const period = now.toISOString().slice(0, 7);
  const policies = ((await knex('budget_policies').where({ active: true })) as PolicyRow[]).map(present);
  const due: DueAlert[] = [];
  for (const policy of policies) {
    const subjectId = policy.scope === 'user' ? policy.user_id! : policy.organisation_id!;
    const spentUsd = (await spendGroupMonthSpend(knex, groupOf(policy.scope, subjectId), now)).spentNano / 1e9;
    const crossed = policy.thresholds.filter((t) => spentUsd * 100 >= policy.amount_usd * t);
    if (crossed.length === 0) continue;
    const recipients = await recipientsOf(knex, policy);
    const subject = (await knex(policy.scope === 'user' ? 'users' : 'organisations')
      .where({ id: subjectId })
      .first(policy.scope === 'user' ? 'display_name as name' : 'name')) as { name: string };
    for (const threshold of crossed)
      for (const r of recipients) {
        if (await alertedUnderAnotherVersion(knex, policy, subjectId, period, threshold, r.id)) continue;
        const [row] = (await knex('budget_alerts')
          .insert({
            policy_id: policy.policy_id,
            period,
            threshold,
            recipient_user_id: r.id,
            spent_usd: spentUsd.toFixed(9),
            amount_usd: policy.amount_usd.toFixed(6),
            state: 'queued',
          })
          .onConflict(['policy_id', 'period', 'threshold', 'recipient_user_id'])
          .ignore()
          .returning('id')) as { id: string | number }[];
        if (row)
          due.push({
            alertId: Number(row.id),
            policyId: policy.policy_id,
            recipientUserId: r.id,
            email: r.email,
            scope: policy.scope,
            subjectName: subject.name,
            threshold,
            spentUsd,
            amountUsd: policy.amount_usd,
          });
      }
  }
  return due;
}

/** Records how a delivery went. */
export async function markAlert(knex: Knex, alertId: number, outcome: { sent: true } | { sent: false; reason: string }, now: Date) {
  await knex('budget_alerts')
    .where({ id: alertId })
    .update(outcome.sent ? { state: 'sent', sent_at: now } : { state: 'failed', reason: outcome.reason.slice(0, 500) });
}

/** Thresholds as a user writes them: "50, 80, 100" or a list; each 1–100 per cent. */
export function parseThresholds(input: unknown): number[] {
  // Left out, or the form's field left empty: the default thresholds.
  const unset = input === undefined || (typeof input === 'string' && input.trim() === '');
  const list = unset ? [50, 80, 100] : Array.isArray(input) ? input : typeof input === 'string' ? input.split(',') : [input];
  const values = list.map((v) => (typeof v === 'string' ? v.trim() : v));
  // "50,,80" is a typing slip to point out, not two thresholds.
  if (values.some((v) => v === '')) {
    throw new ApiError('validation_error', {
      status: 422,
      param: 'thresholds',
      humanMessage: 'A threshold is missing between two commas (for example 50,80,100)',
    });
  }
  // Plain whole numbers, as amounts are plain decimals: Number() would read "1e2" or "0x50" too.
  const numbers = values.map((v) => (typeof v === 'string' && !/^\d{1,3}$/.test(v) ? Number.NaN : Number(v)));
  if (numbers.length === 0 || numbers.length > 10 || numbers.some((n) => !Number.isInteger(n) || n < 1 || n > 100))
    throw new ApiError('validation_error', {
      status: 422,
      param: 'thresholds',
      humanMessage: 'Give up to 10 thresholds, each a whole percentage from 1 to 100 (for example 50,80,100)',
    });
  return numbers;
}
