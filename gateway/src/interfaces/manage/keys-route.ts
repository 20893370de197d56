import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AuditRepository, InvalidAuditCursorError, toStoredAttempt } from '../../../../core/audit/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import { InvalidCursorError, KeyAnnouncer, KeyRepository, type KeyPatch, type KeyRecord } from '../../../../core/keys/index.js';
import type { GatewayDeps } from '../../deps.js';
import { validateBody, validateQuery } from '../../http/validate.js';
import { keyView } from './key-view.js';
import { requireAdmin } from './require-admin.js';
import { auditQuery, createKeyRequest, listKeysQuery, patchKeyRequest } from './schema.js';

const keyIdParam = z.strictObject({ id: z.string().regex(/^key_[0-9A-Za-z]{20}$/, 'is not a key id') });

/** Checks model and region names against the catalogue so a typo cannot lock a key out silently. */
function checkCatalogueNames(
  deps: GatewayDeps,
  models: readonly string[] | null | undefined,
  regions: readonly string[] | null | undefined,
): void {
  models?.forEach((model, i) => {
    if (model !== 'auto' && !deps.catalogue.routes.has(model)) {
      throw new ApiError('validation_error', {
        param: `allowed_models[${i}]`,
        humanMessage: `Unknown model "${model}"; GET /v1/models lists the catalogue`,
      });
    }
  });
  const known = new Set(deps.catalogue.suppliers.map((s) => s.region));
  regions?.forEach((region, i) => {
    if (!known.has(region)) {
      throw new ApiError('validation_error', {
        param: `allowed_regions[${i}]`,
        humanMessage: `No supplier is in region "${region}"; known regions: ${[...known].join(', ')}`,
      });
    }
  });
}

async function loadKey(repository: KeyRepository, request: FastifyRequest): Promise<KeyRecord> {
  const { id } = validateBody(keyIdParam, request.params);
  const key = await repository.findById(id);
  // API tokens share the table but not these routes: their own rules (one team or project,
  // no budget of their own) are kept by /v1/manage/tokens, as a key is 404 there.
  if (!key || key.kind !== 'managed') throw new ApiError('not_found', { param: 'key_id', humanMessage: `There is no key ${id}` });
  return key;
}

function refuseIfImmutable(key: KeyRecord): void {
  if (key.source === 'crd') {
    throw new ApiError('conflict', { humanMessage: `Key ${key.id} is owned by a Kubernetes ManagedKey; change it with kubectl` });
  }
  if (key.status === 'revoked') throw new ApiError('conflict', { humanMessage: `Key ${key.id} is revoked; revoked keys cannot change` });
}

/** Management API for keys under `/v1/manage/keys` (docs/keys.md). */
export function registerKeyManagementRoutes(app: FastifyInstance, deps: GatewayDeps, repository: KeyRepository): void {
  const now = () => new Date(deps.clock());
  const announcer = new KeyAnnouncer(deps.store, { logger: (facts, message) => deps.logger.warn(facts, message) });
  app.addHook('onClose', async () => announcer.stop());
  /**
   * Tells every replica that the key changed. A change the replicas cannot hear yet is not done:
   * the answer is 503 and the announcement is retried in the background until the store takes
   * it; repeating the call announces again, so retries converge.
   */
  const publish = async (key: KeyRecord) => {
    deps.keys.evict(key.secretHash);
    try {
      await announcer.announce(key.secretHash);
    } catch (error) {
      throw new ApiError('service_unavailable', {
        humanMessage: `Key ${key.id} is ${key.status} in the database, but the gateways could not be told yet (the shared store is unreachable); this is retried automatically — repeat the call to confirm`,
        cause: error,
      });
    }
  };

  app.post('/v1/manage/keys', async (request, reply: FastifyReply) => {
    requireAdmin(request);
    const body = validateBody(createKeyRequest, request.body);
    checkCatalogueNames(deps, body.allowed_models, body.allowed_regions);
    const { record, secret } = await repository.create({
      kind: 'managed',
      name: body.name,
      source: 'api',
      allowedModels: body.allowed_models ?? null,
      allowedRegions: body.allowed_regions ?? null,
      budgetLimitUsd: body.budget_limit ?? null,
      budgetPeriod: body.budget_period ?? (body.budget_limit !== undefined && body.budget_limit !== null ? 'monthly' : null),
      rateLimitRpm: body.rate_limit_rpm ?? null,
      metadata: body.metadata ?? {},
      payerId: body.payer ?? null,
    });
    // The secret is shown only now, so a failed announcement must not cost the answer: it stays
    // owed and is retried (a new key is in no cache yet but replicas' negative caches).
    deps.keys.evict(record.secretHash);
    await announcer.announce(record.secretHash).catch(() => undefined);
    void reply.code(201);
    return { ...(await keyView(deps.store, record, now(), { noSpendYet: true })), key: secret };
  });

  app.get('/v1/manage/keys', async (request) => {
    requireAdmin(request);
    const query = validateQuery(listKeysQuery, request.query);
    try {
      const page = await repository.list({
        // API tokens have their own listing (/v1/manage/tokens).
        kind: 'managed',
        limit: query.limit,
        ...(query.status && { status: query.status }),
        ...(query.name_prefix && { namePrefix: query.name_prefix }),
        ...(query.source && { source: query.source }),
        ...(query.cursor && { cursor: query.cursor }),
      });
      const data = await Promise.all(page.data.map((k) => keyView(deps.store, k, now(), { database: deps.database })));
      return { object: 'list', data, next_cursor: page.nextCursor, has_more: page.nextCursor !== null };
    } catch (error) {
      if (error instanceof InvalidCursorError)
        throw new ApiError('validation_error', { param: 'cursor', humanMessage: 'The cursor is not one this API returned' });
      throw error;
    }
  });

  app.get('/v1/manage/keys/:id', async (request) => {
    requireAdmin(request);
    return keyView(deps.store, await loadKey(repository, request), now(), { database: deps.database });
  });

  app.patch('/v1/manage/keys/:id', async (request) => {
    requireAdmin(request);
    const key = await loadKey(repository, request);
    refuseIfImmutable(key);
    const body = validateBody(patchKeyRequest, request.body);
    checkCatalogueNames(deps, body.allowed_models, body.allowed_regions);
    const patch: KeyPatch = {
      ...(body.name !== undefined && { name: body.name }),
      ...(body.allowed_models !== undefined && { allowedModels: body.allowed_models }),
      ...(body.allowed_regions !== undefined && { allowedRegions: body.allowed_regions }),
      ...(body.budget_limit !== undefined && { budgetLimitUsd: body.budget_limit }),
      ...(body.budget_period !== undefined && { budgetPeriod: body.budget_period }),
      ...(body.budget_limit !== undefined &&
        body.budget_limit !== null &&
        !body.budget_period &&
        !key.budgetPeriod && { budgetPeriod: 'monthly' as const }),
      ...(body.rate_limit_rpm !== undefined && { rateLimitRpm: body.rate_limit_rpm }),
      ...(body.metadata !== undefined && { metadata: body.metadata }),
      ...(body.payer !== undefined && { payerId: body.payer }),
      ...(body.status !== undefined && { status: body.status }),
    };
    const updated = (await repository.update(key.id, patch))!;
    await publish(updated);
    // This gateway's requests of the key in flight count on a new budget counter before the
    // answer shows it — carried here, or by the announcement's carry, which this waits for.
    deps.spend.flights.see(updated);
    await deps.spend.carryFlights(deps.store, updated, now());
    return keyView(deps.store, updated, now(), { database: deps.database });
  });

  const revoke = async (request: FastifyRequest) => {
    requireAdmin(request);
    const key = await loadKey(repository, request);
    if (key.source === 'crd') refuseIfImmutable(key);
    // Idempotent, and a repeat announces again: a revoke whose announcement failed converges.
    const revoked = key.status === 'revoked' ? key : (await repository.update(key.id, { status: 'revoked' }))!;
    await publish(revoked);
    return keyView(deps.store, revoked, now(), { database: deps.database });
  };
  app.post('/v1/manage/keys/:id/revoke', revoke);
  app.delete('/v1/manage/keys/:id', revoke);

  const audit = new AuditRepository(deps.database);
  app.get('/v1/manage/keys/:id/audit', async (request) => {
    requireAdmin(request);
    const key = await loadKey(repository, request);
    const query = validateQuery(auditQuery, request.query);
    if (query.from && query.to && query.from > query.to) {
      throw new ApiError('validation_error', { param: 'from', humanMessage: '"from" must not be after "to"' });
    }
    try {
      const page = await audit.listForKey(key.id, {
        limit: query.limit,
        ...(query.from && { from: query.from }),
        ...(query.to && { to: query.to }),
        ...(query.cursor && { cursor: query.cursor }),
      });
      const data = page.data.map((r) => ({
        timestamp: r.timestamp,
        key_id: r.keyId,
        interface: r.interface,
        model: r.model,
        supplier: r.supplier,
        region: r.region,
        input_tokens: r.inputTokens,
        output_tokens: r.outputTokens,
        cached_input_tokens: r.cachedInputTokens,
        cache_write_input_tokens: r.cacheWriteInputTokens,
        cost_usd: r.costUsd,
        latency_ms: r.latencyMs,
        request_id: r.requestId,
        status: r.status,
        code: r.code,
        failover: r.failover,
        attempts: r.attempts.map(toStoredAttempt),
        session: r.session,
        auto_routed: r.autoRouted === true,
      }));
      return { object: 'list', data, next_cursor: page.nextCursor, has_more: page.nextCursor !== null };
    } catch (error) {
      if (error instanceof InvalidAuditCursorError)
        throw new ApiError('validation_error', { param: 'cursor', humanMessage: 'The cursor is not one this API returned' });
      throw error;
    }
  });
}
