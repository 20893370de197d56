// The dashboard's help panels (docs/portal.md "Help panels"): what each explains, where it is
// shown, and whether a user hid it. One table row per user and hidden (or re-shown) panel.
import type { Knex } from 'knex';

/** Every help panel, with the page it belongs to (where the hide/show form sends the user back). */
export const helpPanels = {
  autorouter: {
    page: '/dashboard/autorouter',
    title: 'How auto chooses',
    paragraphs: [
      'Send "model": "auto" and the gateway picks a model your key may use that can serve the request (tools, images, context size, region).',
      'Preferred models are tried first, in order; otherwise the cheapest model wins, or with the premium mode the most expensive. Excluded models are never chosen.',
      'A key’s own preference wins over yours; an administrator’s override of a key wins over both; your organisation’s policy applies where neither says anything, and its exclusions always apply.',
    ],
  },
  projects: {
    page: '/dashboard/projects',
    title: 'Projects',
    paragraphs: [
      'A project groups people and their API tokens (svc_…); every request made with a project token is paid by the project’s own wallet (project:<id>), never by the member who issued the token.',
      'Department admins create projects in their department, org admins anywhere in the organisation; every member of a project may issue and revoke its tokens and add colleagues.',
      'Platform engineers can issue tokens for a project with the Management API too: POST /v1/manage/tokens with {"name": "…", "project": "<project id>"}.',
    ],
  },
  qualitative: {
    page: '/dashboard/qualitative',
    title: 'Reading the quality explorer',
    paragraphs: [
      'Each row is one model at one supplier across the whole platform: the share of requests answered without error, latency of the answered ones, and typical request size.',
      'Only aggregates are shown, and only for pairs with enough requests that no single customer’s traffic can be read off them; prompts and answers are never stored here.',
    ],
  },
} as const;

/** One help panel's name. */
export type HelpPanel = keyof typeof helpPanels;

/** Whether the user hid this panel (a user never seen hides nothing). */
export async function isHelpHidden(knex: Knex, userId: number | undefined, panel: HelpPanel): Promise<boolean> {
  if (userId === undefined) return false;
  const row = (await knex('user_help_panels').where({ user_id: userId, panel }).first('hidden')) as { hidden: boolean } | undefined;
  return row?.hidden ?? false;
}

/** Hides or shows a panel for a user. */
export async function setHelpHidden(knex: Knex, userId: number, panel: HelpPanel, hidden: boolean): Promise<void> {
  await knex('user_help_panels')
    .insert({ user_id: userId, panel, hidden, updated_at: knex.fn.now() })
    .onConflict(['user_id', 'panel'])
    .merge();
}
