// Budget policies and alerts against a real gateway sharing the portal's database and store:
// spend crossing a threshold through the gateway, with concurrent requests and several workers
// evaluating at once, alerts each consenting recipient exactly once and nobody without consent;
// the alert history is the caller's own and writes nothing; a hard stop is the gateway's cap.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import pino from 'pino';
import { deliverBudgetAlerts } from '../../portal/src/jobs.js';
import { fundWallet, signUp, startPortalWithGateway, type SignedInUser } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
const knex = () => world.portal.database.knex;
let orgId: number;

const jobDeps = () => ({
  knex: knex(),
  logger: pino({ level: 'silent' }),
  dataDir: world.portal.portal.deps.settings.SVC_DATA_DIR,
  clock: Date.now,
  mailer: world.portal.portal.deps.mailer,
  baseUrl: world.portal.url,
});

async function keyOf(user: SignedInUser): Promise<string> {
  await fundWallet(world.gateway, `user:${user.id}`, 50);
  return ((await (await user.client.postJson('/dashboard/keys/new', { name: 'budgeted' })).json()) as { secret: string }).secret;
}
const ask = (secret: string) =>
  new OpenAI({ baseURL: `${world.gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions
    .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'spend a little' }], max_tokens: 8 })
    .then(
      () => 'ok',
      (e: unknown) => (e instanceof OpenAI.APIError ? `${e.status} ${String(e.code)}` : 'error'),
    );
const monthSpend = async (userId: number) =>
  Number(
    (
      (await knex()('audit_log')
        .whereIn('key_id', knex()('api_keys').select('id').where({ owner_user_id: userId }))
        .sum({ usd: 'cost_usd' })
        .first()) as { usd: string | null }
    ).usd ?? 0,
  );
const mailsTo = (email: string) =>
  world.portal.mail.filter((m) => m.includes(`email to ${email}`) && m.includes('/dashboard/budgets')).length;

beforeAll(async () => {
  world = await startPortalWithGateway();
  const [org] = (await knex()('organisations')
    .insert({ name: 'Budget Org', slug: `budget-${Date.now()}` })
    .returning('id')) as { id: number }[];
  orgId = org!.id;
});
afterAll(async () => {
  await world?.close();
});

describe('budget policies and alerts', () => {
  it('crossing 80% under concurrency alerts each consenting user once, and nobody without consent', async () => {
    const consenting = await signUp(world.portal, { organisationId: orgId });
    const silent = await signUp(world.portal, { organisationId: orgId });
    const keys = [await keyOf(consenting), await keyOf(silent)];
    // One request's cost sizes the budgets so that a burst crosses 80%.
    expect(await ask(keys[0]!)).toBe('ok');
    expect(await ask(keys[1]!)).toBe('ok');
    await waitFor('the first costs', async () => (await monthSpend(consenting.id)) > 0 && (await monthSpend(silent.id)) > 0);
    const unit = await monthSpend(consenting.id);
    for (const user of [consenting, silent]) {
      const res = await user.client.postJson('/dashboard/budgets/activate', { amount_usd: (unit * 5).toFixed(6), thresholds: '80' });
      expect(res.status, await res.clone().text()).toBe(201);
    }
    expect((await consenting.client.postJson('/dashboard/budgets/consent', {})).status).toBe(200);
    // Below the threshold: nothing yet.
    expect(await deliverBudgetAlerts(jobDeps())).toBe(0);
    await Promise.all(keys.flatMap((k) => Array.from({ length: 6 }, () => ask(k))));
    for (const user of [consenting, silent])
      await waitFor('spend past 80% in the rollup', async () => (await monthSpend(user.id)) >= unit * 4);
    // Three workers evaluate at once: one delivery in all.
    const delivered = await Promise.all([deliverBudgetAlerts(jobDeps()), deliverBudgetAlerts(jobDeps()), deliverBudgetAlerts(jobDeps())]);
    expect(delivered.reduce((a, b) => a + b, 0)).toBe(1);
    expect(mailsTo(consenting.email)).toBe(1);
    expect(mailsTo(silent.email)).toBe(0);
    expect(await deliverBudgetAlerts(jobDeps())).toBe(0);
    // Saving the same policy again (a new version of it) announces nothing already announced.
    const again = await consenting.client.postJson('/dashboard/budgets/activate', { amount_usd: (unit * 5).toFixed(6), thresholds: '80' });
    expect(again.status).toBe(201);
    expect(await deliverBudgetAlerts(jobDeps())).toBe(0);
    expect(mailsTo(consenting.email)).toBe(1);
    // Small amounts in the portal's money format, not rounded to cents ("$0.00 spent").
    const entry = world.portal.mail.find((m) => m.includes(`email to ${consenting.email}`) && m.includes('/dashboard/budgets'))!;
    // The message as written to the outbox, quoted-printable decoded.
    const mail = readFileSync(/written to (\S+\.eml)/.exec(entry)![1]!, 'utf8')
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    expect(mail).not.toContain('$0.00 spent');
    expect(mail).toMatch(/has reached 80%: \$0\.\d*[1-9]\d* spent this month/);

    const history = (await (await consenting.client.get('/dashboard/budgets/alert-history')).json()) as {
      data: { alert_id: number; threshold: number; state: string }[];
    };
    expect(history.data).toHaveLength(1);
    expect(history.data[0]).toMatchObject({ threshold: 80, state: 'sent' });
    // Another user's alert id as a cursor reveals nothing and changes nothing.
    const rowsBefore = JSON.stringify(await knex()('budget_alerts').orderBy('id'));
    const forged = await silent.client.get(`/dashboard/budgets/alert-history?before_id=${history.data[0]!.alert_id + 1}`);
    expect(forged.status).toBe(200);
    expect(((await forged.json()) as { data: unknown[] }).data).toEqual([]);
    const own = await consenting.client.get(`/dashboard/budgets/alert-history?before_id=${history.data[0]!.alert_id}`);
    expect(((await own.json()) as { data: unknown[] }).data).toEqual([]);
    expect(JSON.stringify(await knex()('budget_alerts').orderBy('id'))).toBe(rowsBefore);
    for (const bad of ['?before_id=abc', '?limit=0', '?limit=101', '?colour=red'])
      expect((await consenting.client.get(`/dashboard/budgets/alert-history${bad}`)).status, bad).toBe(422);
    // Consent revoked: the page says so.
    await consenting.client.postJson('/dashboard/budgets/consent/revoke', {});
    expect(await (await consenting.client.get('/dashboard/budgets')).text()).toContain('You do not receive budget alerts');
  });

  it('spend past several thresholds at once is one email, for the highest, naming the others', async () => {
    const user = await signUp(world.portal, { organisationId: orgId });
    const key = await keyOf(user);
    expect(await ask(key)).toBe('ok');
    await waitFor('the cost in the rollup', async () => (await monthSpend(user.id)) > 0);
    const spent = await monthSpend(user.id);
    // A budget of half what was spent: 1%, 50% and 100% are all passed before the first run.
    const amount = Math.max(0.000001, Math.floor((spent / 2) * 1e6) / 1e6); // the form takes 6 decimals
    const res = await user.client.postJson('/dashboard/budgets/activate', { amount_usd: amount.toFixed(6), thresholds: '1,50,100' });
    expect(res.status, await res.clone().text()).toBe(201);
    expect((await user.client.postJson('/dashboard/budgets/consent', {})).status).toBe(200);
    expect(await deliverBudgetAlerts(jobDeps())).toBe(3);
    expect(mailsTo(user.email)).toBe(1);
    const entry = world.portal.mail.find((m) => m.includes(`email to ${user.email}`) && m.includes('/dashboard/budgets'))!;
    const mail = readFileSync(/written to (\S+\.eml)/.exec(entry)![1]!, 'utf8')
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    expect(mail).toContain('has reached 100%');
    expect(mail).toMatch(/, \d{3,}% of it\. It passed your 1%, 50% alerts too\./);
    const history = (await (await user.client.get('/dashboard/budgets/alert-history')).json()) as {
      data: { threshold: number; state: string }[];
    };
    expect(history.data.map((a) => [a.threshold, a.state]).sort()).toEqual([
      [1, 'sent'],
      [100, 'sent'],
      [50, 'sent'],
    ]);
  });

  it("an organisation's policy is set by its administrators and alerts them; a hard stop is enforced at the gateway", async () => {
    const admin = await signUp(world.portal, { organisationId: orgId, role: 'org_admin' });
    const member = await signUp(world.portal, { organisationId: orgId });
    expect((await member.client.postJson('/dashboard/budgets/activate', { scope: 'organisation', amount_usd: 1 })).status).toBe(403);
    for (const bad of [
      { amount_usd: 0 },
      // Finer than the column's 6 decimals: 1e-7 was stored as $0, and every alert fired at once.
      { amount_usd: 1e-7 },
      { amount_usd: 1.23456789 },
      { amount_usd: 'lots' },
      { amount_usd: 5, thresholds: '0,80' },
      { amount_usd: 5, thresholds: '150' },
      // Thresholds take the plain numbers amounts take: no exponent, no hex (1e2 was stored as 100).
      { amount_usd: 5, thresholds: '1e2' },
      { amount_usd: 5, thresholds: '50,0x50' },
      { amount_usd: '1e3' },
      { amount_usd: '1000000001' },
    ])
      expect((await admin.client.postJson('/dashboard/budgets/activate', bad)).status, JSON.stringify(bad)).toBe(422);
    // Two problems at once are both named (the form shows each beside its field), not one per try.
    const both = await admin.client.postJson('/dashboard/budgets/activate', { amount_usd: 'lots', thresholds: '150' });
    const refusal = (await both.json()) as { detail: { loc: string[]; msg: string }[] };
    expect(both.status).toBe(422);
    expect(refusal.detail.map((d) => d.loc.join('.'))).toEqual(['body.amount_usd', 'body.thresholds']);
    expect(refusal.detail[1]!.msg).toContain('each a whole percentage from 1 to 100');
    const form = await admin.client.postForm(
      '/dashboard/budgets/activate',
      { amount_usd: 'lots', thresholds: '150' },
      { accept: 'text/html' },
    );
    const html = await form.text();
    expect(form.status).toBe(422);
    // The amount's message says the rule, its maximum included.
    expect(html).toContain('must be a positive amount in US dollars');
    expect(html).toContain('at most 1,000,000,000');
    expect(html).toContain('each a whole percentage from 1 to 100');
    const org = await admin.client.postJson('/dashboard/budgets/activate', {
      scope: 'organisation',
      amount_usd: '0.000001',
      thresholds: [50],
    });
    expect(org.status).toBe(201);
    await admin.client.postJson('/dashboard/budgets/consent', {});
    await member.client.postJson('/dashboard/budgets/consent', {});
    // The organisation spent already (first test): its admin is alerted, a plain member is not.
    await deliverBudgetAlerts(jobDeps());
    expect(mailsTo(admin.email)).toBe(1);
    expect(mailsTo(member.email)).toBe(0);

    // A personal hard stop becomes the gateway's cap for the user's keys.
    const capped = await signUp(world.portal);
    const secret = await keyOf(capped);
    const stop = await capped.client.postJson('/dashboard/budgets/activate', { amount_usd: '0.000001', hard_stop: true });
    expect(((await stop.json()) as { policy: { hard_stop: boolean } }).policy.hard_stop).toBe(true);
    expect(await ask(secret)).toBe('402 budget_exceeded');
    // The refusal says where such a stop is changed, not only that an administrator can raise a budget.
    const stopped = await new OpenAI({ baseURL: `${world.gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'once more' }], max_tokens: 8 })
      .catch((e: unknown) => e);
    expect(String((stopped as { error?: { human_message?: string } }).error?.human_message)).toContain(
      "changed on the portal's Budgets page",
    );
    const page = await (await capped.client.get('/dashboard/budgets')).text();
    // A query parameter the page does not take is 422, as on the keys page.
    expect((await capped.client.get('/dashboard/budgets?x=1', { accept: 'application/json' })).status).toBe(422);
    expect(page).toContain('data-testid="budget-policies"');
  });

  it("a personal hard stop can lower the monthly budget an administrator set, never lift it, and turning it off gives the administrator's back", async () => {
    const platform = await signUp(world.portal, { role: 'platform_admin' });
    const member = await signUp(world.portal);
    const secret = await keyOf(member);
    const setCap = async (usd: string) =>
      expect(
        (await platform.client.postJson(`/dashboard/admin/users/${member.id}/monthly-budget`, { monthly_budget_usd: usd })).status,
      ).toBe(200);
    const activate = (body: Record<string, unknown>) => member.client.postJson('/dashboard/budgets/activate', body);

    await setCap('0.000002');
    expect(await ask(secret)).toBe('402 budget_exceeded');
    // Above the administrator's cap: refused, and the cap stays.
    const lifted = await activate({ amount_usd: '1000', hard_stop: true });
    expect(lifted.status).toBe(403);
    expect(await lifted.text()).toContain('only lower the monthly budget an administrator set');
    // From the page: the form again, with the reason and what was typed.
    const page = await member.client.postForm(
      '/dashboard/budgets/activate',
      { amount_usd: '1000', hard_stop: 'true', thresholds: '50,80' },
      { accept: 'text/html' },
    );
    expect(page.status).toBe(403);
    const html = await page.text();
    expect(html).toContain('Please correct the form');
    expect(html).toContain('only lower the monthly budget an administrator set');
    expect(html).toContain('value="1000"');
    expect(html).toContain('value="50,80"');
    expect(await ask(secret)).toBe('402 budget_exceeded');

    // Below it: accepted, and it stays the cap when the administrator raises theirs.
    expect((await activate({ amount_usd: '0.000001', hard_stop: true })).status).toBe(201);
    await setCap('1000');
    expect(await ask(secret)).toBe('402 budget_exceeded');

    // The hard stop replaced by alerts only: the administrator's $1,000 is the cap again.
    expect((await activate({ amount_usd: '100', hard_stop: false })).status).toBe(201);
    expect(await ask(secret)).toBe('ok');
  });
});
