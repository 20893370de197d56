import { describe, expect, test } from 'vitest';
import { inviteStanding } from './invites.js';

const invite = { email: 'Ana@Example.com', organisationId: 7, role: 'org_admin' as const, status: 'pending' as const };
const ana = (organisationId: number | null, role: 'member' | 'org_admin' | 'owner' = 'member') => ({
  email: 'ana@example.com ',
  role,
  organisationId,
});

describe('inviteStanding: the one rule the landing page explains and accept enforces', () => {
  test.each([
    ['nobody signed in', invite, undefined, 'other_address'],
    ['another address', invite, { ...ana(null), email: 'bo@example.com' }, 'other_address'],
    ['the address in another case, in no organisation', invite, ana(null), 'acceptable'],
    ['a member there, invited higher', invite, ana(7, 'member'), 'acceptable'],
    ['a member there with the invited role', invite, ana(7, 'org_admin'), 'member_already'],
    ['a member there with a higher role', invite, ana(7, 'owner'), 'member_already'],
    ['a member there, the invite used up', { ...invite, status: 'accepted' as const }, ana(7, 'member'), 'member_already'],
    ['a member of another organisation', invite, ana(8), 'other_organisation'],
    ['an expired invite', { ...invite, status: 'expired' as const }, ana(null), 'not_pending'],
    ['a withdrawn invite, another organisation', { ...invite, status: 'revoked' as const }, ana(8), 'not_pending'],
  ])('%s', (_what, theInvite, user, standing) => {
    expect(inviteStanding(theInvite, user)).toBe(standing);
  });
});
