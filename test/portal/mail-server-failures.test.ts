// What a person asks for does not wait for the mail server, nor fail with it (outside probe): with
// SMTP down or refusing, a sign-up answered 500 with its account made (so retrying said
// email_taken) and an invitation 500 with its invite made; with SMTP slow, both took 30 s, and the
// processor's webhook — the payer's browser with it — waited for the receipt. Mail is now sent
// after the answer (portal/src/mail/mailer.ts sendLater), and a failure is logged.
//
// A real SMTP server on loopback (test/support/smtp-receiver.ts) holds its replies (a slow server:
// the answers below come while it holds), refuses with 550, or is not there at all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PortalClient } from '../support/portal-client.js';
import { startSmtpReceiver, type SmtpReceiver } from '../support/smtp-receiver.js';
import { testPassword } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';
import { ledgerNano, startBillingWorld, startCheckout, type BillingWorld } from './billing-helpers.js';

let smtp: SmtpReceiver;
let world: BillingWorld;
let tag = 0;
const knex = () => world.portal.database.knex;

beforeAll(async () => {
  smtp = await startSmtpReceiver();
  world = await startBillingWorld({ settings: { SVC_SMTP_URL: smtp.url } });
});
afterAll(async () => {
  smtp?.release();
  await world?.close();
  await smtp?.close();
});

const freshEmail = () => `mail-${++tag}-${Date.now()}@example.com`;

/** A verified, signed-in user made while the mail server accepts (its link read at the server). */
async function verifiedUser(role?: string) {
  const previous = smtp.behaviour;
  smtp.behaviour = 'accept';
  const email = freshEmail();
  const client = new PortalClient(world.portal.url);
  expect((await client.postJson('/auth/register', { email, password: testPassword, name: 'Mail Test' })).status).toBe(201);
  await waitFor('the verification email', () => smtp.linkTo(email, '/verify-email?token=') !== undefined);
  const link = new URL(smtp.linkTo(email, '/verify-email?token=')!);
  expect((await client.get(link.pathname + link.search, { accept: 'application/json' })).status).toBe(200);
  if (role) await knex()('users').whereRaw('lower(email) = ?', [email]).update({ role });
  expect((await client.postJson('/auth/login', { email, password: testPassword })).status).toBe(200);
  smtp.behaviour = previous;
  const { id } = (await knex()('users').whereRaw('lower(email) = ?', [email]).first('id')) as { id: number };
  return { client, email, id };
}

/** A new organisation to invite into; its id. */
async function organisation(): Promise<number> {
  const [row] = (await knex()('organisations')
    .insert({ name: `Mail Test ${++tag}`, slug: `mail-test-${tag}-${Date.now()}` })
    .returning('id')) as { id: number }[];
  return row!.id;
}

const mailTo = (email: string) => smtp.messages.filter((m) => m.to.includes(email));

describe('a slow mail server (its replies held)', () => {
  it('a sign-up and an invitation are answered while it holds; their mail arrives once it answers', async () => {
    const owner = await verifiedUser('owner');
    smtp.behaviour = 'hold';
    try {
      const email = freshEmail();
      const signup = await new PortalClient(world.portal.url).postJson('/auth/register', { email, password: testPassword, name: 'Slow' });
      expect(signup.status).toBe(201);
      const invitee = freshEmail();
      const invited = await owner.client.postJson('/dashboard/admin/users/invite', {
        email: invitee,
        role: 'member',
        org_id: await organisation(),
      });
      expect(invited.status, await invited.clone().text()).toBe(201);
      await waitFor('both messages at the server, unanswered', () => smtp.held() === 2);
      expect(mailTo(email)).toHaveLength(0);
      smtp.release();
      await waitFor('the verification and the invitation delivered', () => mailTo(email).length === 1 && mailTo(invitee).length === 1);
    } finally {
      smtp.behaviour = 'accept';
      smtp.release();
    }
  });

  it('a card payment is credited, and the payer sent back, while the receipt waits at the server', async () => {
    const payer = await verifiedUser();
    smtp.behaviour = 'hold';
    try {
      const { url, payment_id } = await startCheckout(payer.client, 10);
      const outcome = await world.double.payOnHostedPage(url);
      expect('redirect' in outcome).toBe(true);
      await world.double.settled();
      expect(await knex()('billing_payments').where({ id: payment_id }).first('status')).toEqual({ status: 'succeeded' });
      expect(await ledgerNano(world.portal, `user:${payer.id}`)).toBe(10e9);
      await waitFor('the receipt at the server, unanswered', () => smtp.held() === 1);
      expect(mailTo(payer.email)).toHaveLength(1); // the verification only
      smtp.release();
      await waitFor('the receipt delivered', () => mailTo(payer.email).some((m) => m.raw.includes('Receipt')));
    } finally {
      smtp.behaviour = 'accept';
      smtp.release();
    }
  });
});

describe('a mail server that refuses (550)', () => {
  it('a sign-up is made and answered 201, the failure logged; a resend once the server accepts lets the account be verified', async () => {
    smtp.behaviour = 'refuse';
    const email = freshEmail();
    const client = new PortalClient(world.portal.url);
    try {
      expect((await client.postJson('/auth/register', { email, password: testPassword, name: 'Refused' })).status).toBe(201);
      await world.portal.mailSettled();
      expect(world.portal.logText()).toContain('verification email could not be sent');
      expect(mailTo(email)).toHaveLength(0);
    } finally {
      smtp.behaviour = 'accept';
    }
    expect((await client.postJson('/auth/resend-verification', { email })).status).toBe(202);
    await waitFor('the resent verification', () => smtp.linkTo(email, '/verify-email?token=') !== undefined);
    const link = new URL(smtp.linkTo(email, '/verify-email?token=')!);
    expect((await client.get(link.pathname + link.search, { accept: 'application/json' })).status).toBe(200);
  });

  it('an invitation is made and answered 201, the failure logged', async () => {
    const owner = await verifiedUser('owner');
    smtp.behaviour = 'refuse';
    try {
      const invitee = freshEmail();
      const invited = await owner.client.postJson('/dashboard/admin/users/invite', {
        email: invitee,
        role: 'member',
        org_id: await organisation(),
      });
      expect(invited.status, await invited.clone().text()).toBe(201);
      await world.portal.mailSettled();
      expect(world.portal.logText()).toContain('invitation email could not be sent');
      expect(await knex()('invites').where({ email: invitee }).first('status')).toEqual({ status: 'pending' });
    } finally {
      smtp.behaviour = 'accept';
    }
  });
});
