// The get-started checklist: each step is done when the data says so (a key exists, a request
// reached the gateway, the paying wallet holds money) or, for the steps without evidence, when
// the user ticks it. One place lists the steps and how each is decided.
import type { Knex } from 'knex';
import { resolveEffectivePayer } from '../../../../core/billing/index.js';
import type { User } from '../../../../core/identity/index.js';

export const manualSteps = ['read_guide', 'explore_usage'] as const;
export type ManualStep = (typeof manualSteps)[number];

export interface ChecklistStep {
  id: string;
  title: string;
  href: string;
  done: boolean;
  /** Ticked by the data (true) or by hand (false). */
  automatic: boolean;
}

export interface Checklist {
  hidden: boolean;
  steps: ChecklistStep[];
  done: number;
}

/** The user's checklist now. */
export async function checklistFor(knex: Knex, user: User): Promise<Checklist> {
  const state = (await knex('user_get_started').where({ user_id: user.id }).first('hidden', 'ticked')) as
    { hidden: boolean; ticked: string[] } | undefined;
  const ticked = new Set(state?.ticked ?? []);
  const keys = knex('api_keys').where({ owner_user_id: user.id }).select('id');
  const [hasKey, hasRequest, payer] = await Promise.all([
    knex('api_keys').where({ owner_user_id: user.id }).first('id'),
    knex('usage_hourly').whereIn('key_id', keys).first('key_id'),
    resolveEffectivePayer(knex, user.id),
  ]);
  const exempt = (await knex('organisations')
    .where({ id: user.organisationId ?? -1 })
    .first('billing_exempt')) as { billing_exempt: boolean } | undefined;
  const funded =
    Boolean(exempt?.billing_exempt) ||
    Boolean(await knex('wallet_entries').where({ payer_id: payer.payerId }).andWhere('amount_nano', '>', 0).first('id'));
  const steps: ChecklistStep[] = [
    { id: 'verify_email', title: 'Verify your email address', href: '/dashboard/settings', done: user.emailVerified, automatic: true },
    {
      id: 'fund_wallet',
      title: 'Add funds to the wallet that pays for you',
      href: '/dashboard/billing/fund',
      done: funded,
      automatic: true,
    },
    { id: 'create_key', title: 'Create an API key', href: '/dashboard/keys/new', done: Boolean(hasKey), automatic: true },
    {
      id: 'first_request',
      title: 'Make a first request through the gateway',
      href: '/dashboard/guide',
      done: Boolean(hasRequest),
      automatic: true,
    },
    {
      id: 'read_guide',
      title: 'Read the guide to the OpenAI and Anthropic SDKs',
      href: '/dashboard/guide',
      done: ticked.has('read_guide'),
      automatic: false,
    },
    {
      id: 'explore_usage',
      title: 'Look at usage and the request log',
      href: '/dashboard/usage',
      done: ticked.has('explore_usage'),
      automatic: false,
    },
  ];
  return { hidden: state?.hidden ?? false, steps, done: steps.filter((s) => s.done).length };
}

/** One of the page's actions. */
export type ChecklistAction = { kind: 'hide' | 'resume' | 'reset' } | { kind: 'tick' | 'untick'; step: ManualStep };

/** Applies one of the page's actions. */
export async function applyChecklistAction(knex: Knex, userId: number, action: ChecklistAction): Promise<void> {
  const current = (await knex('user_get_started').where({ user_id: userId }).first('hidden', 'ticked')) as
    { hidden: boolean; ticked: string[] } | undefined;
  let hidden = current?.hidden ?? false;
  let ticked = new Set(current?.ticked ?? []);
  if ('step' in action) {
    if (action.kind === 'tick') ticked.add(action.step);
    else ticked.delete(action.step);
  } else if (action.kind === 'reset') {
    hidden = false;
    ticked = new Set();
  } else hidden = action.kind === 'hide';
  await knex('user_get_started')
    .insert({ user_id: userId, hidden, ticked: JSON.stringify([...ticked]), updated_at: new Date() })
    .onConflict('user_id')
    .merge();
}
