import type { Knex } from 'knex';
import { payerUserId, type PayerSource } from '../../../../core/billing/payer.js';
import { roleAtLeast, type Role } from '../../../../core/identity/index.js';

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

/** Who is looking at a payer: the words say as much about its owner as this person may know. */
export interface PayerViewer {
  id: number;
  role: Role;
  organisationId: number | null;
}

/**
 * Whose wallet a payer id (`user:42`, `project:7`) names, in words for the person viewing it: their
 * own; another user's, or a project's, by name only to a platform administrator or a member of
 * its organisation (a payer set through the Management API may be anyone's), else without it. A
 * payer the portal does not know (free text from the Management API, or one whose user or project
 * is gone), or a look-up that fails, is shown as its id.
 */
export async function walletOfPayer(knex: Knex, payerId: string, viewer: PayerViewer): Promise<string> {
  try {
    return (await payerWords(knex, payerId, viewer)) ?? `wallet ${payerId}`;
  } catch {
    return `wallet ${payerId}`;
  }
}

/** A platform administrator, or a member of `organisationId`: may see who (or which project) it holds. */
function mayKnow(viewer: PayerViewer, organisationId: number | null): boolean {
  return roleAtLeast(viewer.role, 'platform_admin') || (viewer.organisationId !== null && organisationId === viewer.organisationId);
}

async function payerWords(knex: Knex, payerId: string, viewer: PayerViewer): Promise<string | undefined> {
  const userId = payerUserId(payerId);
  if (userId === viewer.id) return 'your own wallet';
  if (userId !== undefined) {
    const owner = (await knex('users').where({ id: userId }).first('display_name', 'email', 'organisation_id')) as
      { display_name: string; email: string; organisation_id: number | null } | undefined;
    if (!owner) return undefined;
    return mayKnow(viewer, owner.organisation_id)
      ? `the wallet of ${owner.display_name || owner.email} (${owner.email})`
      : 'another user’s wallet';
  }
  const projectId = /^project:([1-9][0-9]{0,8})$/.exec(payerId)?.[1];
  if (projectId === undefined) return undefined;
  const project = (await knex('projects')
    .where({ id: Number(projectId) })
    .first('name', 'organisation_id')) as { name: string; organisation_id: number } | undefined;
  if (!project) return undefined;
  return mayKnow(viewer, project.organisation_id) ? `the wallet of project “${project.name}”` : 'another organisation’s project wallet';
}

/**
 * The wallet a top-up by `viewer` credits, named for them — the fund page's review and the
 * confirmation say where the money went, not "your wallet" when it is another's: their own is
 * "your wallet"; their organisation's billing user's is "the billing wallet of <organisation> (<name>,
 * <email>)"; any other as walletOfPayer names it.
 */
export async function creditedWallet(knex: Knex, payerId: string, viewer: PayerViewer): Promise<string> {
  const userId = payerUserId(payerId);
  if (userId === viewer.id) return 'your wallet';
  if (userId !== undefined && viewer.organisationId !== null) {
    try {
      const row = (await knex('organisations as o')
        .join('users as b', 'b.id', 'o.billing_user_id')
        .where({ 'o.id': viewer.organisationId, 'o.billing_user_id': userId })
        .first('o.name', 'b.display_name', 'b.email')) as { name: string; display_name: string; email: string } | undefined;
      if (row) return `the billing wallet of ${row.name} (${row.display_name ? `${row.display_name}, ` : ''}${row.email})`;
    } catch {
      // Named below, as any other payer.
    }
  }
  return walletOfPayer(knex, payerId, viewer);
}
