// API tokens (`svc_…`) under /v1/manage/tokens (docs/keys.md "API tokens"): bearer credentials
// scoped to a team or a project, kept in the same table as managed keys (kind `token`), so the
// gateway authenticates, enforces and audits them exactly like keys, and a revoke reaches every
// replica through the same announcement.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import { InvalidCursorError, KeyAnnouncer, type KeyRecord, type KeyRepository } from '../../../../core/keys/index.js';
import { projectPayerId } from '../../../../core/projects/index.js';
import type { GatewayDeps } from '../../deps.js';
import { validateBody, validateQuery } from '../../http/validate.js';
import { requireAdmin } from './require-admin.js';
import { createTokenRequest, listTokensQuery } from './schema.js';

const tokenIdParam = z.strictObject({ id: z.string().regex(/^key_[0-9A-Za-z]{20}$/, 'is not a token id') });

/** A token as the API shows it: never the secret (only at creation) nor its hash. */
function tokenView(token: KeyRecord): Record<string, unknown> {
  return {
    id: token.id,
    object: 'api_token',
    name: token.name,
    team: token.metadata.team ?? null,
    project: token.metadata.project ?? null,
    payer: token.payerId,
    status: token.status,
    token_hint: token.secretHint,
    created: token.createdAt,
    updated: token.updatedAt,
  };
}

/** Registers create, list, read and revoke of API tokens. */
export function registerTokenManagementRoutes(app: FastifyInstance, deps: GatewayDeps, repository: KeyRepository): void {
  const announcer = new KeyAnnouncer(deps.store, { logger: (facts, message) => deps.logger.warn(facts, message) });
  app.addHook('onClose', async () => announcer.stop());

  const loadToken = async (request: FastifyRequest): Promise<KeyRecord> => {
    const { id } = validateBody(tokenIdParam, request.params);
    const token = await repository.findById(id);
    // A managed key's id is not a token here: each resource has its own routes.
    if (!token || token.kind !== 'token')
      throw new ApiError('not_found', { param: 'token_id', humanMessage: `There is no API token ${id}` });
    return token;
  };

  app.post('/v1/manage/tokens', async (request, reply) => {
    requireAdmin(request);
    const body = validateBody(createTokenRequest, request.body);
    const scope: Record<string, string> = body.team ? { team: body.team } : body.project ? { project: body.project } : {};
    const { record, secret } = await repository.create({
      kind: 'token',
      name: body.name,
      source: 'api',
      metadata: scope,
      // A project pays for its own tokens (the spec's first effective payer; the schema refuses
      // another); otherwise the payer is what the caller names, or none.
      payerId: body.project ? projectPayerId(body.project) : (body.payer ?? null),
    });
    deps.keys.evict(record.secretHash);
    await announcer.announce(record.secretHash).catch(() => undefined);
    void reply.code(201);
    return { ...tokenView(record), token: secret };
  });

  app.get('/v1/manage/tokens', async (request) => {
    requireAdmin(request);
    const query = validateQuery(listTokensQuery, request.query);
    try {
      const page = await repository.list({
        kind: 'token',
        limit: query.limit,
        ...(query.status && { status: query.status }),
        ...(query.cursor && { cursor: query.cursor }),
      });
      return { object: 'list', data: page.data.map(tokenView), next_cursor: page.nextCursor, has_more: page.nextCursor !== null };
    } catch (error) {
      if (error instanceof InvalidCursorError)
        throw new ApiError('validation_error', { param: 'cursor', humanMessage: 'The cursor is not one this API returned' });
      throw error;
    }
  });

  app.get('/v1/manage/tokens/:id', async (request) => {
    requireAdmin(request);
    return tokenView(await loadToken(request));
  });

  const revoke = async (request: FastifyRequest) => {
    requireAdmin(request);
    const token = await loadToken(request);
    // Idempotent; a repeat announces again, so a revoke whose announcement failed converges.
    const revoked = token.status === 'revoked' ? token : (await repository.update(token.id, { status: 'revoked' }))!;
    deps.keys.evict(revoked.secretHash);
    try {
      await announcer.announce(revoked.secretHash);
    } catch (error) {
      throw new ApiError('service_unavailable', {
        humanMessage: `Token ${token.id} is revoked in the database, but the gateways could not be told yet (the shared store is unreachable); this is retried automatically — repeat the call to confirm`,
        cause: error,
      });
    }
    return tokenView(revoked);
  };
  app.post('/v1/manage/tokens/:id/revoke', revoke);
  app.delete('/v1/manage/tokens/:id', revoke);
}
