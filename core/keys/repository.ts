import type { Knex } from 'knex';
import type { BudgetPeriod, KeyRecord, KeySource, KeyStatus } from './record.js';
import { generateKeyId, generateSecret, hashSecret, secretHint } from './secrets.js';

interface KeyRow {
  id: string;
  kind: 'managed' | 'token';
  name: string;
  secret_hash: string;
  secret_hint: string;
  status: KeyStatus;
  allowed_models: string[] | null;
  allowed_regions: string[] | null;
  budget_limit_usd: string | null;
  budget_period: BudgetPeriod | null;
  rate_limit_rpm: number | null;
  metadata: Record<string, string>;
  source: KeySource;
  created_at: Date;
  updated_at: Date;
}

function toRecord(row: KeyRow): KeyRecord {
  return {
    id: row.id,
    kind: row.kind,
    name: row.name,
    secretHash: row.secret_hash,
    secretHint: row.secret_hint,
    status: row.status,
    allowedModels: row.allowed_models,
    allowedRegions: row.allowed_regions,
    budgetLimitUsd: row.budget_limit_usd === null ? null : Number(row.budget_limit_usd),
    budgetPeriod: row.budget_period,
    rateLimitRpm: row.rate_limit_rpm,
    metadata: row.metadata ?? {},
    source: row.source,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/** Fields a new key is created with. */
export interface NewKey {
  kind: 'managed' | 'token';
  name: string;
  source: KeySource;
  allowedModels?: string[] | null;
  allowedRegions?: string[] | null;
  budgetLimitUsd?: number | null;
  budgetPeriod?: BudgetPeriod | null;
  rateLimitRpm?: number | null;
  metadata?: Record<string, string>;
}

/** Keys in PostgreSQL: the system of record. The secret leaves only once, from create(). */
export class KeyRepository {
  constructor(
    private readonly knex: Knex,
    private readonly pepper: string,
  ) {}

  /** Creates a key and returns its record and its secret (shown once, never stored). */
  async create(input: NewKey): Promise<{ record: KeyRecord; secret: string }> {
    const secret = generateSecret(input.kind);
    const [row] = await this.knex<KeyRow>('api_keys')
      .insert({
        id: generateKeyId(),
        kind: input.kind,
        name: input.name,
        secret_hash: hashSecret(secret, this.pepper),
        secret_hint: secretHint(secret),
        status: 'active',
        // pg would send a JS array as a Postgres array literal; jsonb needs JSON text.
        allowed_models: (input.allowedModels ? JSON.stringify(input.allowedModels) : null) as unknown as string[] | null,
        allowed_regions: (input.allowedRegions ? JSON.stringify(input.allowedRegions) : null) as unknown as string[] | null,
        budget_limit_usd: input.budgetLimitUsd === undefined || input.budgetLimitUsd === null ? null : String(input.budgetLimitUsd),
        budget_period: input.budgetPeriod ?? null,
        rate_limit_rpm: input.rateLimitRpm ?? null,
        metadata: JSON.stringify(input.metadata ?? {}) as unknown as Record<string, string>,
        source: input.source,
      })
      .returning('*');
    return { record: toRecord(row as KeyRow), secret };
  }

  /** The key whose secret hashes to `secretHash`, or undefined. */
  async findByHash(secretHash: string): Promise<KeyRecord | undefined> {
    const row = await this.knex<KeyRow>('api_keys').where({ secret_hash: secretHash }).first();
    return row ? toRecord(row as KeyRow) : undefined;
  }

  /** The key with this id, or undefined. */
  async findById(id: string): Promise<KeyRecord | undefined> {
    const row = await this.knex<KeyRow>('api_keys').where({ id }).first();
    return row ? toRecord(row as KeyRow) : undefined;
  }
}
