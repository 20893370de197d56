// Operations views for administrators (docs/administration.md "Operations views"), JSON:
//   GET /dashboard/admin/api/key-rate-limit-state?key_id=  the live limiter, budget, wallet and
//       organisation-budget state of one key, read from the store the gateways enforce with
//   GET /dashboard/admin/api/usage?user_id=&from&to&granularity&split_by   one user's usage
//   GET /dashboard/admin/api/dashboard   the last 24 hours in the caller's scope: hourly requests,
//       errors and cost, the top error codes, and incidents (supplier circuits open now)
//   GET /dashboard/admin/api/proxy-health  each supplier's circuit, its recent failures, and each
//                                          pooled credential's state (in rotation or sidelined)
//   GET /api/admin/token-logs              the credential token log (docs/routing.md "Credential pools")
// All scoped like the admin user list: an organisation's admins see their organisation's keys.
import { Router, type Request } from 'express';
import { z } from 'zod';
import { AUDIT_TABLE } from '../../../../core/audit/rows.js';
import {
  spendGroupCapNano,
  spendGroupWindow,
  type SpendGroup,
  rateWindowKey,
  rateWindowMs,
  readRateWindow,
  nanoPerUsd,
  liveBuckets,
} from '../../../../core/budget/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import { findAdministeredUser, isAllowed, mayAdminister, noSuchUser } from '../../../../core/identity/index.js';
import { KeyRepository } from '../../../../core/keys/index.js';
import {
  credentialEventKinds,
  credentialSidelinedKey,
  queryCredentialEvents,
  supplierFailuresKey,
  supplierOpenKey,
} from '../../../../core/routing/index.js';
import { usageReport, keysInScope, type Granularity, type UsageSplit } from '../../../../core/usage/index.js';
import { enforcedBalanceNano } from '../../../../core/wallets/index.js';
import type { PortalDeps } from '../../deps.js';
import { presentKey } from '../keys/present.js';
import { mayManageKey } from '../keys/scope.js';
import { usageRange } from '../usage/range.js';
import { noQuery, singleString, validate, wholeNumberParam } from '../../web/validation.js';
import { adminRoute } from './route-table.js';
import { adminKeyScope } from './scope.js';

const keyQuery = z.strictObject({ key_id: wholeNumberParam(2_147_483_647) });
const usageQuery = z.strictObject({
  user_id: wholeNumberParam(2_147_483_647),
  from: singleString(40).optional(),
  to: singleString(40).optional(),
  granularity: z.enum(['day', 'hour'], { message: 'must be day or hour' }).optional(),
  split_by: z.enum(['model', 'key', 'supplier'], { message: 'must be model, key or supplier' }).optional(),
});

/** A whole number from 0 to `max`, given once (`since_ms`, `offset`: 0 is meaningful). */
const zeroOrMore = (max: number) =>
  singleString(16)
    .regex(/^\d+$/, `must be a whole number from 0 to ${max}`)
    .transform(Number)
    .refine((n) => n <= max, `must be a whole number from 0 to ${max}`);
/** A text filter where empty means "no filter" (the seed's default). */
const filter = (max: number) =>
  singleString(max)
    .transform((v) => v.trim())
    .optional();
const tokenLogQuery = z.strictObject({
  provider: filter(63),
  key_name: filter(63),
  limit: wholeNumberParam(1000).optional(),
  kinds: filter(200).refine(
    (v) => !v || v.split(',').every((k) => (credentialEventKinds as readonly string[]).includes(k.trim())),
    `must be a comma-separated list of ${credentialEventKinds.join(', ')}`,
  ),
  since_ms: zeroOrMore(8_640_000_000_000_000).optional(),
  offset: zeroOrMore(100_000).optional(),
  window_hours: wholeNumberParam(2_160).optional(),
  source: z.enum(['', 'gateway', 'admin'], { message: 'must be gateway or admin (or empty)' }).optional(),
  error_kind: filter(100),
});

export function adminOperationsRouter(deps: PortalDeps): Router {
  const router = Router();
  const knex = deps.database;
  const keys = new KeyRepository(knex, deps.settings.SVC_KEY_PEPPER);
  const now = () => new Date(deps.clock());

  adminRoute(router, 'GET', '/dashboard/admin/api/key-rate-limit-state', validate({ query: keyQuery }), async (req, res) => {
    const { key_id } = req.valid!.query as z.infer<typeof keyQuery>;
    const key = await keys.findByNumber(key_id);
    if (!key || !(await mayManageKey(knex, req.user!, key, 'admin.view')))
      throw new ApiError('not_found', { param: 'key_id', humanMessage: 'There is no key with this id among those you administer' });
    const at = now();
    // A spend group's cap (PostgreSQL) and what the gateways counted this month (the store).
    const groupState = async (group: SpendGroup | null) => {
      if (group === null) return null;
      const [capNano, counter] = await Promise.all([
        spendGroupCapNano(knex, group),
        deps.store.hashGetAll(spendGroupWindow(group, at).counterKey),
      ]);
      return {
        monthly_budget_usd: capNano < 0 ? null : capNano / nanoPerUsd,
        // As the next enforcement counts it: reservations of a killed gateway whose lease ended left out.
        counted_this_month_usd: counter['0'] === undefined ? null : (liveBuckets(counter, at).buckets.get(0) ?? 0) / nanoPerUsd,
      };
    };
    const [rate, shown, walletMirror, organisation, owner] = await Promise.all([
      deps.store.runScript(readRateWindow, [rateWindowKey(key.id)], [rateWindowMs]),
      presentKey(deps.store, knex, key, at),
      key.payerId ? enforcedBalanceNano(deps.store, key.payerId, at) : Promise.resolve(null),
      groupState(key.organisationId === null ? null : { scope: 'organisation', id: key.organisationId }),
      groupState(key.ownerUserId === null ? null : { scope: 'user', id: key.ownerUserId }),
    ]);
    const rpm = key.rateLimitRpm;
    res.json({
      key_id: key.number,
      gateway_key_id: key.id,
      name: key.name,
      status: shown.status,
      rate_limit: {
        rpm,
        window_ms: rateWindowMs,
        counted_in_window: rate.counted,
        remaining: rpm === null ? null : Math.max(0, rpm - rate.counted),
        // When a refused caller may retry: the oldest counted request leaving the window.
        retry_after_ms:
          rpm !== null && rate.counted >= rpm && rate.oldestLeavesAtMs !== null ? Math.max(0, rate.oldestLeavesAtMs - rate.nowMs) : 0,
      },
      budget: {
        limit_usd: shown.budget_limit,
        period: shown.budget_period,
        used_usd: shown.budget_used,
        reserved_usd: shown.budget_reserved,
        remaining_usd: shown.budget_remaining,
        resets_at: shown.resets_at,
      },
      wallet: {
        payer_id: key.payerId,
        // The store's mirror the gateways reserve against, with reservations whose lease ended (a
        // killed gateway's) counted back as the next request will; null when not loaded (read from
        // the ledger on next use).
        mirror_balance_usd: walletMirror === null ? null : walletMirror / nanoPerUsd,
      },
      organisation: organisation && { organisation_id: key.organisationId, ...organisation },
      owner: owner && { user_id: key.ownerUserId, ...owner },
      read_at: at.toISOString(),
    });
  });

  adminRoute(router, 'GET', '/dashboard/admin/api/usage', validate({ query: usageQuery }), async (req, res) => {
    const q = req.valid!.query as z.infer<typeof usageQuery>;
    const user = await findAdministeredUser(knex, q.user_id);
    if (!user || !mayAdminister(req.user!, 'admin.view', user)) throw noSuchUser();
    const granularity: Granularity = q.granularity ?? 'day';
    const { from, to } = usageRange(granularity, q.from, q.to, now());
    res.json({
      user_id: user.id,
      ...(await usageReport(knex, { scope: { ownerUserId: user.id }, from, to, granularity, split: q.split_by as UsageSplit | undefined })),
    });
  });

  /** The last 24 hours in the caller's scope: the one source of the JSON and of the admin page. */
  const dashboard = async (req: Request) => {
    const scope = adminKeyScope(req);
    const to = now();
    const from = new Date(Math.floor(to.getTime() / 3_600_000) * 3_600_000 - 23 * 3_600_000);
    const [usage, errors, health] = await Promise.all([
      usageReport(knex, { scope, from, to: new Date(from.getTime() + 24 * 3_600_000), granularity: 'hour', split: 'model' }),
      knex(AUDIT_TABLE)
        .whereIn('key_id', keysInScope(knex, scope))
        .andWhere('ts', '>=', from.toISOString())
        .andWhere('status', '>=', 400)
        .groupBy('code')
        .select('code')
        .count({ n: '*' })
        .orderBy('n', 'desc')
        .limit(10)
        .then((rows) => rows as unknown as { code: string | null; n: string | number }[]),
      supplierHealth(),
    ]);
    return {
      from: usage.from,
      to: usage.to,
      hourly: usage.bins.map((b) => ({ start: b.start, requests: b.requests, errors: b.errors, cost_usd: b.cost_usd })),
      totals: usage.totals,
      top_models: usage.groups.slice(0, 5),
      top_errors: errors.map((e) => ({ code: e.code ?? 'unknown', count: Number(e.n) })),
      incidents: health
        .filter((s) => s.circuit === 'open')
        .map((s) => ({ kind: 'supplier_circuit_open', supplier: s.supplier, region: s.region, until: s.open_until })),
    };
  };

  // The last 24 hours, always: a parameter (days=, hours=) would be a choice it does not offer.
  adminRoute(router, 'GET', '/dashboard/admin/api/dashboard', noQuery, async (req, res) => {
    res.json(await dashboard(req));
  });

  // The administrators' overview: the same 24 hours as charts and tables, with supplier health
  // for platform admins (docs/administration.md "Operations views").
  adminRoute(router, 'GET', '/dashboard/admin', async (req, res) => {
    const data = await dashboard(req);
    const platform = isAllowed(req.user!, 'admin.platform.manage');
    res.render('dashboard/admin/overview', {
      title: 'Administration',
      section: 'admin-overview',
      data,
      suppliers: platform ? await supplierHealth() : null,
      chartData: JSON.stringify({
        labels: data.hourly.map((h) => h.start.slice(11, 16)),
        requests: data.hourly.map((h) => h.requests),
        errors: data.hourly.map((h) => h.errors),
        cost: data.hourly.map((h) => h.cost_usd),
      }).replace(/</g, '\\u003c'),
    });
  });

  /** Each supplier's circuit from the store (shared by every gateway replica). */
  const supplierHealth = async () => {
    const at = deps.clock();
    return Promise.all(
      deps.catalogue.suppliers.map(async (s) => {
        const [open, failures] = await Promise.all([deps.store.get(supplierOpenKey(s.name)), deps.store.get(supplierFailuresKey(s.name))]);
        const until = Number(open ?? 0);
        return {
          supplier: s.name,
          region: s.region,
          protocol: s.protocol,
          circuit: until > at ? ('open' as const) : ('closed' as const),
          open_until: until > at ? new Date(until).toISOString() : null,
          failures_in_window: Number(failures ?? 0),
          credentials: await Promise.all(
            s.credentials.map(async (c) => {
              const sidelined = Number((await deps.store.get(credentialSidelinedKey(s.name, c.name))) ?? 0);
              return {
                name: c.name,
                state: sidelined > at ? ('sidelined' as const) : ('in_rotation' as const),
                sidelined_until: sidelined > at ? new Date(sidelined).toISOString() : null,
              };
            }),
          ),
        };
      }),
    );
  };

  adminRoute(router, 'GET', '/dashboard/admin/api/proxy-health', async (req, res) => {
    const since = new Date(deps.clock() - 3_600_000);
    const [suppliers, recent] = await Promise.all([
      supplierHealth(),
      // Failed attempts of the last hour per supplier and code, from the audit log's attempts.
      knex
        .from(knex(AUDIT_TABLE).where('ts', '>=', since.toISOString()).select(knex.raw('jsonb_array_elements(attempts) as a')).as('x'))
        .whereRaw("a->>'outcome' = 'failed'")
        .groupByRaw("a->>'supplier', a->>'code'")
        .select(knex.raw("a->>'supplier' as supplier"), knex.raw("coalesce(a->>'code', 'unknown') as code"))
        .count({ n: '*' })
        .then((rows) => rows as unknown as { supplier: string; code: string; n: string | number }[]),
    ]);
    // Each credential's token-log events of the last hour, by kind.
    const credentialEvents = (await knex('credential_events')
      .where('at', '>=', since)
      .groupBy('provider', 'key_name', 'kind')
      .select('provider', 'key_name', 'kind')
      .count({ n: '*' })) as { provider: string; key_name: string; kind: string; n: string | number }[];
    res.json({
      checked_at: new Date(deps.clock()).toISOString(),
      suppliers: suppliers.map((s) => ({
        ...s,
        recent_failures: recent.filter((r) => r.supplier === s.supplier).map((r) => ({ code: r.code, count: Number(r.n) })),
        credentials: s.credentials.map((c) => ({
          ...c,
          events_last_hour: Object.fromEntries(
            credentialEvents.filter((e) => e.provider === s.supplier && e.key_name === c.name).map((e) => [e.kind, Number(e.n)]),
          ),
        })),
      })),
    });
  });

  adminRoute(router, 'GET', '/api/admin/token-logs', validate({ query: tokenLogQuery }), async (req, res) => {
    const q = req.valid!.query as z.infer<typeof tokenLogQuery>;
    const query = {
      ...(q.provider && { provider: q.provider }),
      ...(q.key_name && { keyName: q.key_name }),
      ...(q.kinds && { kinds: q.kinds.split(',').map((k) => k.trim()) }),
      ...(q.source && { source: q.source }),
      ...(q.error_kind && { errorKind: q.error_kind }),
      sinceMs: q.since_ms ?? 0,
      windowHours: q.window_hours ?? 24,
      limit: q.limit ?? 100,
      offset: q.offset ?? 0,
    };
    const page = await queryCredentialEvents(knex, query, now());
    res.json({
      object: 'list',
      query: {
        provider: q.provider ?? '',
        key_name: q.key_name ?? '',
        limit: query.limit,
        kinds: q.kinds ?? '',
        since_ms: query.sinceMs,
        offset: query.offset,
        window_hours: query.windowHours,
        source: q.source ?? '',
        error_kind: q.error_kind ?? '',
      },
      ...page,
      has_more: query.offset + page.data.length < page.total,
    });
  });

  return router;
}
