import type { FastifyInstance } from 'fastify';
import { nanoPerUsd } from '../../../../core/budget/index.js';
import type { WalletEntry, WalletLedger } from '../../../../core/wallets/index.js';
import { validateBody } from '../../http/validate.js';
import { requireAdmin } from './require-admin.js';
import { creditRequest, payerParam } from './schema.js';
import { z } from 'zod';

const payerParams = z.strictObject({ payer: payerParam });

function entryView(e: WalletEntry): Record<string, unknown> {
  return {
    id: e.id,
    amount_usd: e.amountUsd,
    kind: e.kind,
    reason: e.reason,
    request_id: e.requestId,
    actor: e.actor,
    created: e.createdAt,
  };
}

/**
 * Wallet administration until the portal's billing lands: credit a payer (a ledger entry with a
 * reason) and read its balance and latest entries.
 */
export function registerWalletRoutes(app: FastifyInstance, ledger: WalletLedger): void {
  app.post('/v1/manage/wallets/:payer/credits', async (request, reply) => {
    requireAdmin(request);
    const { payer } = validateBody(payerParams, request.params);
    const body = validateBody(creditRequest, request.body);
    const { entry, balanceUsd } = await ledger.credit(payer, body.amount_usd, body.reason, 'admin');
    void reply.code(201);
    return { payer, balance_usd: balanceUsd, entry: entryView(entry) };
  });

  app.get('/v1/manage/wallets/:payer', async (request) => {
    requireAdmin(request);
    const { payer } = validateBody(payerParams, request.params);
    const { balanceNano, entries } = await ledger.statement(payer, 50);
    return { payer, balance_usd: balanceNano / nanoPerUsd, entries: entries.map(entryView) };
  });
}
