import type { Knex } from 'knex';
import { payerUserId, type PayerSource } from '../../../../core/billing/payer.js';

/**
 * Whose wallet pays, in words for the person reading the billing pages: the wallet's id
 * (`user:42`, `project:7`) is the Management API's reference, not something a person recognises.
 */
export function walletWords(source: PayerSource): string {
  switch (source) {
    case 'caller':
      return 'your own wallet';
    case 'organisation_billing_user':
      return "your organisation's billing user's wallet";
    case 'delegated_user':
      return 'the wallet of the user your billing is delegated to';
    case 'project':
      return "the project's wallet";
  }
}

/**
 * Whose wallet a payer id (`user:42`, `project:7`) names, in words for the person viewing it: their
 * own, another user's by name, a project's by name. A payer the portal does not know (free text
 * from the Management API, or one whose user or project is gone) is shown as its id.
 */
export async function walletOfPayer(knex: Knex, payerId: string, viewerId: number): Promise<string> {
  const userId = payerUserId(payerId);
  if (userId === viewerId) return 'your own wallet';
  if (userId !== undefined) {
    const owner = (await knex('users').where({ id: userId }).first('display_name', 'email')) as
      { display_name: string; email: string } | undefined;
    if (owner) return `the wallet of ${owner.display_name || owner.email} (${owner.email})`;
  }
  const projectId = /^project:([1-9][0-9]{0,8})$/.exec(payerId)?.[1];
  if (projectId !== undefined) {
    const project = (await knex('projects')
      .where({ id: Number(projectId) })
      .first('name')) as { name: string } | undefined;
    if (project) return `the wallet of project “${project.name}”`;
  }
  return `wallet ${payerId}`;
}
