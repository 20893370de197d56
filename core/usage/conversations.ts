// Conversations for administrators (docs/administration.md "Conversations"): a conversation is
// the gateway's session (X-Session-Id, metadata.session_id) with the metadata of its requests —
// the platform stores no message text. Listed per session within an administrator's key scope;
// deleting one removes the session link from its requests while their billing rows stay.
import type { Knex } from 'knex';
import { AUDIT_TABLE } from '../audit/rows.js';
import { keysInScope, type KeyScope } from './scope.js';

/** One conversation in the list. */
export interface ConversationSummary {
  conversation_id: string;
  requests: number;
  errors: number;
  keys: number;
  models: string[];
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  first_at: string;
  last_at: string;
}

type Row = {
  session: string;
  requests: string | number;
  errors: string | number;
  keys: string | number;
  models: string[] | null;
  input_tokens: string | number;
  output_tokens: string | number;
  cost_usd: string | number;
  first_at: Date;
  last_at: Date;
};

/**
 * Conversations with a request since `since`, most recent activity first, at most `limit`;
 * `q` keeps those whose id contains it (any case); `before` continues after the previous page's
 * last `last_at`.
 */
export async function listConversations(
  knex: Knex,
  scope: KeyScope,
  options: { since: Date; limit: number; q?: string | undefined; before?: Date | undefined },
): Promise<ConversationSummary[]> {
  let q = knex(AUDIT_TABLE)
    .whereIn('key_id', keysInScope(knex, scope))
    .whereNotNull('session')
    .andWhere('ts', '>=', options.since.toISOString())
    .groupBy('session')
    .select(
      'session',
      knex.raw('count(*) as requests'),
      knex.raw('count(*) filter (where status >= 400) as errors'),
      knex.raw('count(distinct key_id) as keys'),
      knex.raw('array_remove(array_agg(distinct model), null) as models'),
      knex.raw('sum(input_tokens) as input_tokens'),
      knex.raw('sum(output_tokens) as output_tokens'),
      knex.raw('sum(cost_usd) as cost_usd'),
      knex.raw('min(ts) as first_at'),
      knex.raw('max(ts) as last_at'),
    )
    .orderByRaw('max(ts) desc, session')
    .limit(options.limit);
  if (options.q) q = q.whereRaw('lower(session) like ?', [`%${options.q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`]);
  if (options.before) q = q.havingRaw('max(ts) < ?', [options.before.toISOString()]);
  const rows = (await q) as Row[];
  return rows.map((r) => ({
    conversation_id: r.session,
    requests: Number(r.requests),
    errors: Number(r.errors),
    keys: Number(r.keys),
    models: r.models ?? [],
    input_tokens: Number(r.input_tokens),
    output_tokens: Number(r.output_tokens),
    cost_usd: Number(r.cost_usd),
    first_at: new Date(r.first_at).toISOString(),
    last_at: new Date(r.last_at).toISOString(),
  }));
}

/**
 * Deletes a conversation within the scope: its requests lose the session link (so it no longer
 * exists anywhere in the portal); their rows, with tokens and cost, stay for billing and audit.
 * Returns how many requests it held (0: no such conversation in scope).
 */
export async function deleteConversation(knex: Knex, scope: KeyScope, conversationId: string): Promise<number> {
  return knex(AUDIT_TABLE).whereIn('key_id', keysInScope(knex, scope)).where({ session: conversationId }).update({ session: null });
}
