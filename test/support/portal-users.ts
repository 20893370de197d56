// Users and money for portal suites: a verified, signed-in account (optionally placed in an
// organisation and department with a role), a wallet funded through the gateway's Management
// API as a platform administrator would, and a portal with a gateway sharing its database and
// store (as `npm start` runs them). One implementation instead of a copy per suite.
import { expect } from 'vitest';
import { PortalClient } from './portal-client.js';
import { harnessSecrets, startPortalHarness, type PortalHarness } from './portal-harness.js';
import { harnessCatalogue, startGatewayHarness, type GatewayHarness, type HarnessSupplier } from './gateway-harness.js';

export const testPassword = 'correct horse 7 battery';

export interface SignedInUser {
  client: PortalClient;
  id: number;
  email: string;
  password: string;
}

let counter = 0;

/** Registers, verifies (through the emailed link) and signs in a new user. */
export async function signUp(
  portal: PortalHarness,
  setup: { organisationId?: number; departmentId?: number; role?: string; email?: string; name?: string; password?: string } = {},
): Promise<SignedInUser> {
  const email = setup.email ?? `user${++counter}-${process.pid}-${Date.now()}@example.com`;
  const password = setup.password ?? testPassword;
  const client = new PortalClient(portal.url);
  expect((await client.postJson('/auth/register', { email, password, name: setup.name ?? `User ${counter}` })).status).toBe(201);
  const link = new URL(await portal.emailedLink(email, '/verify-email?token='));
  expect((await client.get(link.pathname + link.search, { accept: 'application/json' })).status).toBe(200);
  const knex = portal.database.knex;
  const changes = {
    ...(setup.organisationId !== undefined && { organisation_id: setup.organisationId }),
    ...(setup.departmentId !== undefined && { department_id: setup.departmentId }),
    ...(setup.role && { role: setup.role }),
  };
  if (Object.keys(changes).length > 0) await knex('users').whereRaw('lower(email) = ?', [email]).update(changes);
  expect((await client.postJson('/auth/login', { email, password })).status).toBe(200);
  const { id } = (await knex('users').whereRaw('lower(email) = ?', [email]).first('id')) as { id: number };
  return { client, id, email, password };
}

/** Credits `payer` with `usd` through the gateway's Management API (POST /v1/manage/wallets/…/credits). */
export async function fundWallet(gateway: GatewayHarness, payer: string, usd: number): Promise<void> {
  const res = await fetch(`${gateway.gateway.url}/v1/manage/wallets/${encodeURIComponent(payer)}/credits`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gateway.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount_usd: usd, reason: 'test funding' }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
}

/** A portal and a gateway on the same database and store; close() stops both. */
export async function startPortalWithGateway(
  suppliers?: HarnessSupplier[],
  portalOptions: Parameters<typeof startPortalHarness>[0] = {},
  gatewaySettings: Record<string, string> = {},
): Promise<{ portal: PortalHarness; gateway: GatewayHarness; close(): Promise<void> }> {
  // The portal reads the gateway's catalogue, as under `npm start` (it only reads models and prices).
  const portal = await startPortalHarness({
    ...(suppliers && { catalogue: harnessCatalogue(suppliers, () => 'http://127.0.0.1:9/v1', gatewaySettings) }),
    ...portalOptions,
  });
  const gateway = await startGatewayHarness(suppliers, {
    database: portal.database,
    store: portal.store,
    settings: { SVC_KEY_PEPPER: harnessSecrets.SVC_KEY_PEPPER, ...gatewaySettings },
  });
  return {
    portal,
    gateway,
    close: async () => {
      await gateway.close();
      await portal.close();
    },
  };
}
