// Invitations into an organisation: the link's secret goes by email, only its HMAC is stored.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { hashSecret } from '../keys/index.js';
import { tokenLifetimeMs } from './lifetimes.js';
import { ApiError } from '../errors/index.js';
import { roleRank, type Role } from './roles.js';
import { tokenPattern } from './tokens.js';
import { mayGrantInvite, placeInOrganisation, principalOf } from './administration.js';

/** What the invite landing page shows. */
export interface InviteSummary {
  id: number;
  email: string;
  organisationId: number;
  organisationName: string;
  role: Role;
  status: 'pending' | 'accepted' | 'revoked' | 'expired';
  expiresAt: Date;
  /** Whether whoever sent it may still grant it (administration.ts mayGrantInvite); true when the platform sent it. */
  senderMayGrant: boolean;
}

/** Whether the sender of an invite (null: the platform itself) may still grant it. */
async function senderMayGrant(
  knex: Knex,
  invite: { invited_by: number | null; organisation_id: number; department_id: number | null; role: Role },
): Promise<boolean> {
  if (invite.invited_by === null) return true;
  return mayGrantInvite(await principalOf(knex, invite.invited_by), {
    organisationId: invite.organisation_id,
    departmentId: invite.department_id,
    role: invite.role,
  });
}

/**
 * Where a person stands toward a pending invitation (one place for the rules that the landing page
 * explains and `accept` enforces):
 * - `other_address`: not signed in, or signed in with an address the invite is not for;
 * - `member_already`: already in that organisation with the invited role or a higher one, so
 *   accepting changes nothing (for an invite no longer pending: in that organisation at all);
 * - `sender_cannot_grant`: whoever sent it may no longer grant that role there (demoted, suspended,
 *   deleted or moved since: administration.ts mayGrantInvite) — an invitation grants in its
 *   sender's name, so it is refused until they may again;
 * - `other_organisation`: a member of another organisation (only a platform administrator moves people);
 * - `acceptable`: accepting joins the organisation, or raises the role held there.
 * An invite no longer pending is `not_pending` unless one of the first two applies.
 */
export type InviteStanding =
  'other_address' | 'member_already' | 'not_pending' | 'sender_cannot_grant' | 'other_organisation' | 'acceptable';

export function inviteStanding(
  invite: Pick<InviteSummary, 'email' | 'organisationId' | 'role' | 'status'> & Partial<Pick<InviteSummary, 'senderMayGrant'>>,
  user: { email: string; role: Role; organisationId: number | null } | undefined,
): InviteStanding {
  if (!user || invite.email.trim().toLowerCase() !== user.email.trim().toLowerCase()) return 'other_address';
  const pending = invite.status === 'pending';
  const raises = roleRank(invite.role) > roleRank(user.role);
  if (user.organisationId === invite.organisationId && !(pending && raises)) return 'member_already';
  if (!pending) return 'not_pending';
  if (invite.senderMayGrant === false) return 'sender_cannot_grant';
  if (user.organisationId === invite.organisationId) return 'acceptable';
  return user.organisationId !== null ? 'other_organisation' : 'acceptable';
}

/** The refusal of an invitation whose sender may no longer grant it (the landing page says the same). */
export const senderCannotGrant = (role: Role) =>
  new ApiError('conflict', {
    humanMessage: `Whoever sent this invitation can no longer make you ${role.replace('_', ' ')} of this organisation (their role or account changed since); ask one of its administrators for a new invitation`,
  });

/** An invite's state as people see it: a pending one past its expiry is `expired`. */
function shownStatus(row: { status: string; expires_at: Date | string }, now: Date): InviteSummary['status'] {
  const expired = row.status === 'pending' && new Date(row.expires_at).getTime() <= now.getTime();
  return (expired ? 'expired' : row.status) as InviteSummary['status'];
}

/** Invites and their single-use links. */
export class InviteRepository {
  constructor(
    private readonly knex: Knex,
    private readonly pepper: string,
  ) {}

  /**
   * Creates a pending invite; the returned secret goes into the link and is stored nowhere. It
   * replaces a pending invite of the same address to the same organisation (withdrawn: its link
   * stops working), so an address has one invitation there at a time — two, with different
   * roles, could each be accepted in turn (outside probe).
   */
  async create(
    invite: { email: string; organisationId: number; departmentId?: number | null; role: Role; invitedBy: number | null },
    now: Date,
  ): Promise<{ id: number; secret: string }> {
    const secret = randomBytes(32).toString('base64url');
    return this.knex.transaction(async (trx) => {
      await trx('invites')
        .whereRaw('lower(email) = lower(?)', [invite.email])
        .andWhere({ organisation_id: invite.organisationId, status: 'pending' })
        .update({ status: 'revoked' });
      const [row] = await trx('invites')
        .insert({
          email: invite.email,
          organisation_id: invite.organisationId,
          department_id: invite.departmentId ?? null,
          role: invite.role,
          invited_by: invite.invitedBy,
          token_hash: hashSecret(secret, this.pepper),
          expires_at: new Date(now.getTime() + tokenLifetimeMs.invite),
          created_at: now,
        })
        .returning('id');
      return { id: (row as { id: number }).id, secret };
    });
  }

  /** The invite behind a link, whatever its state (the landing page explains an expired one). */
  async findBySecret(secret: string, now: Date): Promise<InviteSummary | undefined> {
    if (!tokenPattern.test(secret)) return undefined;
    const row = await this.knex('invites')
      .join('organisations', 'organisations.id', 'invites.organisation_id')
      .where({ token_hash: hashSecret(secret, this.pepper) })
      .first(
        'invites.id',
        'invites.email',
        'invites.role',
        'invites.organisation_id',
        'invites.status',
        'invites.expires_at',
        'invites.invited_by',
        'invites.department_id',
        'organisations.name as organisation_name',
      );
    if (!row) return undefined;
    return {
      id: row.id,
      email: row.email,
      organisationId: row.organisation_id,
      organisationName: row.organisation_name,
      role: row.role,
      status: shownStatus(row, now),
      expiresAt: row.expires_at,
      senderMayGrant: await senderMayGrant(this.knex, row),
    };
  }

  /** Revokes a pending invite; false when it was not pending. */
  async revoke(id: number): Promise<boolean> {
    return (await this.knex('invites').where({ id, status: 'pending' }).update({ status: 'revoked' })) === 1;
  }

  /**
   * Accepts the invite behind a link for the signed-in user: it must be pending and unexpired,
   * addressed to the user's email, its sender still allowed to grant it (mayGrantInvite, read
   * under a share lock on the sender's row, taken before the invite's — the order a demotion that
   * withdraws it takes), and the user in no other organisation. The user joins the
   * organisation (and department) with the invited role — never lower than a role they already
   * hold — and their keys move with them. One transaction; the invite row is locked so a link
   * cannot be accepted twice. Returns the secret hashes of the user's keys, to announce.
   */
  async accept(
    secret: string,
    user: { id: number; email: string; role: Role; organisationId: number | null },
    now: Date,
  ): Promise<string[]> {
    if (!tokenPattern.test(secret)) throw new ApiError('not_found', { humanMessage: 'This invitation link is not valid' });
    type Row = {
      id: number;
      email: string;
      organisation_id: number;
      department_id: number | null;
      role: Role;
      status: string;
      expires_at: Date;
      invited_by: number | null;
    };
    const tokenHash = hashSecret(secret, this.pepper);
    return this.knex.transaction(async (trx) => {
      const sender = (await trx('invites').where({ token_hash: tokenHash }).first('invited_by')) as
        { invited_by: number | null } | undefined;
      if (sender && sender.invited_by !== null) await trx('users').where({ id: sender.invited_by }).forShare().first('id');
      const invite = (await trx('invites').where({ token_hash: tokenHash }).forUpdate().first()) as Row | undefined;
      if (!invite) throw new ApiError('not_found', { humanMessage: 'This invitation link is not valid' });
      const status = shownStatus(invite, now);
      if (status !== 'pending')
        throw new ApiError('conflict', { humanMessage: `This invitation is ${status}; ask your administrator for a new one` });
      // Pending here, so the standing is one of these; `member_already` accepts and changes nothing.
      const standing = inviteStanding(
        {
          email: invite.email,
          organisationId: invite.organisation_id,
          role: invite.role,
          status: 'pending',
          senderMayGrant: await senderMayGrant(trx, invite),
        },
        user,
      );
      if (standing === 'other_address')
        throw new ApiError('forbidden', { humanMessage: `This invitation is for ${invite.email}; sign in with that address to accept it` });
      if (standing === 'sender_cannot_grant') throw senderCannotGrant(invite.role);
      if (standing === 'other_organisation')
        throw new ApiError('conflict', {
          humanMessage: 'You already belong to another organisation; ask a platform administrator to move you',
        });
      await trx('invites').where({ id: invite.id }).update({ status: 'accepted' });
      return placeInOrganisation(
        trx,
        user.id,
        {
          organisationId: invite.organisation_id,
          departmentId: invite.department_id,
          role: roleRank(user.role) > roleRank(invite.role) ? user.role : invite.role,
        },
        now,
      );
    });
  }
}
