import type { Knex } from 'knex';
import { autorouterLayersOf } from '../autorouter/repository.js';
import { payerUserId } from '../billing/payer.js';
import { effectiveAutorouterPolicy, isDefaultAutorouterPolicy } from '../autorouter/policy.js';
import type { BudgetPeriod, KeyRecord, KeySource, KeyStatus } from './record.js';
import { generateKeyId, generateSecret, hashSecret, secretHint } from './secrets.js';
import { isCanonicalInstant } from '../time/calendar.js';

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
  budget_period_since: Date | null;
  rate_limit_rpm: number | null;
  metadata: Record<string, string>;
  payer_id: string | null;
  source: KeySource;
  managed_by: string | null;
  number: number;
  owner_user_id: number | null;
  organisation_id: number | null;
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
    budgetPeriodSince: row.budget_period_since ? new Date(row.budget_period_since).toISOString() : null,
    rateLimitRpm: row.rate_limit_rpm,
    metadata: row.metadata ?? {},
    payerId: row.payer_id ?? null,
    source: row.source,
    managedBy: row.managed_by ?? null,
    number: Number(row.number),
    ownerUserId: row.owner_user_id ?? null,
    organisationId: row.organisation_id ?? null,
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
  payerId?: string | null;
  /** Owner object of a CRD key (see KeyRecord.managedBy); unique across keys. */
  managedBy?: string | null;
  /** Portal keys: the creating user and their organisation (KeyRecord.ownerUserId). */
  ownerUserId?: number | null;
  organisationId?: number | null;
  /** Initial status (default active); the operator creates a Suspended ManagedKey's key suspended. */
  status?: Extract<KeyStatus, 'active' | 'suspended'>;
}

/** Fields a PATCH may change (undefined = unchanged, null = cleared). */
export type KeyPatch = Partial<
  Pick<NewKey, 'name' | 'allowedModels' | 'allowedRegions' | 'budgetLimitUsd' | 'budgetPeriod' | 'rateLimitRpm' | 'metadata' | 'payerId'>
> & {
  status?: KeyStatus;
};

/** Filters and paging of a key listing. */
export interface KeyListQuery {
  /** Only managed keys or only API tokens (`svc_`); both when absent. */
  kind?: 'managed' | 'token';
  status?: KeyStatus;
  namePrefix?: string;
  source?: KeySource;
  /** Only keys created by this portal user. */
  ownerUserId?: number;
  /** Only keys of this organisation. */
  organisationId?: number;
  /** Only keys charged to this payer (a project's tokens: `project:<id>`). */
  payerId?: string;
  /** Only keys whose owner is in this department (department admins' scope). */
  ownerDepartmentId?: number;
  limit: number;
  /** Opaque cursor from the previous page. */
  cursor?: string;
}

/** Thrown for a cursor that was not produced by list(). */
export class InvalidCursorError extends Error {}

function encodeCursor(createdAt: string, id: string): string {
  return Buffer.from(JSON.stringify([createdAt, id])).toString('base64url');
}

function decodeCursor(cursor: string): [string, string] {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    // Only what encodeCursor can have made: the exact instant form it writes (so no "1" or
    // "2026-02-30" that JavaScript reads and PostgreSQL refuses) and a key id (so no NUL or other
    // text the database would refuse with a 500).
    if (Array.isArray(parsed) && parsed.length === 2 && typeof parsed[0] === 'string' && typeof parsed[1] === 'string') {
      if (isCanonicalInstant(parsed[0]) && /^key_[0-9A-Za-z]{1,64}$/.test(parsed[1])) return [parsed[0], parsed[1]];
    }
  } catch {
    // fall through to the error below
  }
  throw new InvalidCursorError('cursor is not valid');
}

/** A key's model list as stored: each id once, in the order first given (every writer — portal, API, operator — goes through here). */
function modelList(models: string[] | null | undefined): string[] | null | undefined {
  return models ? [...new Set(models)] : models;
}

/** JSON text for a jsonb column (pg would send a JS array as a Postgres array literal). */
function jsonb<T>(value: T | null | undefined): T | null {
  return (value === null || value === undefined ? null : JSON.stringify(value)) as unknown as T | null;
}

/** Keys in PostgreSQL: the system of record. The secret leaves only once, from create(). */
export class KeyRepository {
  constructor(
    private readonly knex: Knex,
    private readonly pepper: string,
  ) {}

  /**
   * Creates a key and returns its record and its secret (shown once, never stored). `secret`
   * is for a caller that generated and saved the secret first (the operator writes it to a
   * Kubernetes Secret before the row exists, so a crash in between loses nothing).
   */
  async create(input: NewKey, secret: string = generateSecret(input.kind)): Promise<{ record: KeyRecord; secret: string }> {
    const [row] = await this.knex<KeyRow>('api_keys')
      .insert({
        id: generateKeyId(),
        // Millisecond timestamps set here (not now() in SQL, which has microseconds) so the
        // list cursor, which carries milliseconds, compares exactly.
        created_at: new Date(),
        updated_at: new Date(),
        kind: input.kind,
        name: input.name,
        secret_hash: hashSecret(secret, this.pepper),
        secret_hint: secretHint(secret),
        status: input.status ?? 'active',
        allowed_models: jsonb(modelList(input.allowedModels)),
        allowed_regions: jsonb(input.allowedRegions),
        budget_limit_usd: input.budgetLimitUsd === undefined || input.budgetLimitUsd === null ? null : String(input.budgetLimitUsd),
        budget_period: input.budgetPeriod ?? null,
        rate_limit_rpm: input.rateLimitRpm ?? null,
        metadata: jsonb(input.metadata ?? {}) as Record<string, string>,
        payer_id: input.payerId ?? null,
        source: input.source,
        managed_by: input.managedBy ?? null,
        owner_user_id: input.ownerUserId ?? null,
        organisation_id: input.organisationId ?? null,
      })
      .returning('*');
    return { record: toRecord(row as KeyRow), secret };
  }

  /**
   * The key whose secret hashes to `secretHash`, or undefined: the gateway's read, so it carries
   * whether its owner's account is inactive, its payer's credit limit and the key's effective
   * autorouter policy too (a few indexed queries, on a cache miss only).
   */
  async findByHash(secretHash: string): Promise<KeyRecord | undefined> {
    const row = (await this.knex('api_keys')
      .leftJoin('users', 'users.id', 'api_keys.owner_user_id')
      .where({ secret_hash: secretHash })
      .first('api_keys.*', 'users.status as owner_status')) as (KeyRow & { owner_status: string | null }) | undefined;
    if (!row) return undefined;
    const record: KeyRecord = toRecord(row);
    if (row.owner_status === 'suspended' || row.owner_status === 'archived') record.ownerInactive = row.owner_status;
    const payerUser = record.payerId === null ? undefined : payerUserId(record.payerId);
    if (payerUser !== undefined) {
      const payer = (await this.knex('users').where({ id: payerUser }).first('credit_limit_usd')) as
        { credit_limit_usd: string | null } | undefined;
      if (payer?.credit_limit_usd && Number(payer.credit_limit_usd) > 0) record.payerCreditUsd = Number(payer.credit_limit_usd);
    }
    const policy = effectiveAutorouterPolicy(
      await autorouterLayersOf(this.knex, { keyId: record.id, ownerUserId: record.ownerUserId, organisationId: record.organisationId }),
    );
    if (!isDefaultAutorouterPolicy(policy)) record.autorouter = policy;
    return record;
  }

  /**
   * Secret hashes of keys changed (created, rotated, updated) at or after `since` — all keys
   * without it — and the latest change time seen, for an incremental index of known hashes.
   */
  async hashesChangedSince(since: Date | undefined): Promise<{ hashes: string[]; latest: Date | undefined }> {
    let builder = this.knex<KeyRow>('api_keys').select('secret_hash', 'updated_at');
    if (since) builder = builder.where('updated_at', '>=', since);
    const rows = (await builder) as Pick<KeyRow, 'secret_hash' | 'updated_at'>[];
    let latest: Date | undefined;
    for (const row of rows) if (!latest || new Date(row.updated_at) > latest) latest = new Date(row.updated_at);
    return { hashes: rows.map((r) => r.secret_hash), latest };
  }

  /** The key with this id, or undefined. */
  async findById(id: string): Promise<KeyRecord | undefined> {
    const row = await this.knex<KeyRow>('api_keys').where({ id }).first();
    return row ? toRecord(row as KeyRow) : undefined;
  }

  /** The key a Kubernetes object owns (KeyRecord.managedBy), or undefined. */
  async findByManagedBy(managedBy: string): Promise<KeyRecord | undefined> {
    const row = await this.knex<KeyRow>('api_keys').where({ managed_by: managedBy }).first();
    return row ? toRecord(row as KeyRow) : undefined;
  }

  /** Keys whose owner starts with `prefix` (e.g. every incarnation of one ManagedKey name). */
  async listManagedByPrefix(prefix: string): Promise<KeyRecord[]> {
    const rows = (await this.knex<KeyRow>('api_keys').whereLike(
      'managed_by',
      `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`,
    )) as KeyRow[];
    return rows.map(toRecord);
  }

  /** Gives a key a new secret (its hash and hint); the old secret stops working. */
  async replaceSecret(id: string, secret: string): Promise<KeyRecord | undefined> {
    const [row] = await this.knex<KeyRow>('api_keys')
      .where({ id })
      .update({
        secret_hash: hashSecret(secret, this.pepper),
        secret_hint: secretHint(secret),
        updated_at: this.knex.fn.now() as unknown as Date,
      })
      .returning('*');
    return row ? toRecord(row as KeyRow) : undefined;
  }

  /** The key with this portal number (`/dashboard/keys/{key_id}`). */
  async findByNumber(number: number): Promise<KeyRecord | undefined> {
    const row = (await this.knex<KeyRow>('api_keys').where({ number }).first()) as KeyRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  /** Deletes a key row (the operator's cleanup of a deleted ManagedKey); true when one was deleted. */
  async delete(id: string): Promise<boolean> {
    return (await this.knex('api_keys').where({ id }).delete()) > 0;
  }

  /** Applies a partial change; returns the new record, or undefined for an unknown id. */
  async update(id: string, patch: KeyPatch): Promise<KeyRecord | undefined> {
    const changes: Record<string, unknown> = { updated_at: this.knex.fn.now() };
    if (patch.name !== undefined) changes.name = patch.name;
    if (patch.allowedModels !== undefined) changes.allowed_models = jsonb(modelList(patch.allowedModels));
    if (patch.allowedRegions !== undefined) changes.allowed_regions = jsonb(patch.allowedRegions);
    if (patch.budgetLimitUsd !== undefined) changes.budget_limit_usd = patch.budgetLimitUsd === null ? null : String(patch.budgetLimitUsd);
    // A new counter name (budget_period_since) makes the gateways rebuild the budget counter from
    // the audit log: when what is counted changes — a key without a period counts monthly
    // (enforcement's default) — and when a limit is set on a key that had none, since no counter
    // counted its spend meanwhile (outside probe: a limit removed and restored forgot the spend in
    // between). Changing only the limit of a limited key keeps the counter.
    const periodChanges = patch.budgetPeriod !== undefined;
    const limitReturns = patch.budgetLimitUsd !== undefined && patch.budgetLimitUsd !== null;
    if (periodChanges) changes.budget_period = patch.budgetPeriod;
    if (periodChanges || limitReturns) {
      const periodChanged = periodChanges ? "coalesce(budget_period, 'monthly') <> ?" : 'false';
      const limitReturned = limitReturns ? 'budget_limit_usd is null' : 'false';
      changes.budget_period_since = this.knex.raw(
        `case when ${periodChanged} or ${limitReturned} then now() else budget_period_since end`,
        periodChanges ? [patch.budgetPeriod ?? 'monthly'] : [],
      );
    }
    if (patch.rateLimitRpm !== undefined) changes.rate_limit_rpm = patch.rateLimitRpm;
    if (patch.metadata !== undefined) changes.metadata = jsonb(patch.metadata);
    if (patch.payerId !== undefined) changes.payer_id = patch.payerId;
    if (patch.status !== undefined) {
      changes.status = patch.status;
      if (patch.status === 'revoked') changes.revoked_at = this.knex.fn.now();
    }
    const [row] = await this.knex<KeyRow>('api_keys').where({ id }).update(changes).returning('*');
    return row ? toRecord(row as KeyRow) : undefined;
  }

  /** A page of keys, newest first, with the cursor of the next page (null at the end). */
  async list(query: KeyListQuery): Promise<{ data: KeyRecord[]; nextCursor: string | null }> {
    let builder = this.knex<KeyRow>('api_keys').select('*');
    if (query.kind) builder = builder.where({ kind: query.kind });
    if (query.status) builder = builder.where({ status: query.status });
    if (query.source) builder = builder.where({ source: query.source });
    if (query.ownerUserId !== undefined) builder = builder.where({ owner_user_id: query.ownerUserId });
    if (query.organisationId !== undefined) builder = builder.where({ organisation_id: query.organisationId });
    if (query.payerId !== undefined) builder = builder.where({ payer_id: query.payerId });
    if (query.ownerDepartmentId !== undefined) {
      const department = query.ownerDepartmentId;
      builder = builder.whereIn('owner_user_id', (q) => q.select('id').from('users').where({ department_id: department }));
    }
    if (query.namePrefix) builder = builder.whereLike('name', `${query.namePrefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    if (query.cursor) {
      const [createdAt, id] = decodeCursor(query.cursor);
      builder = builder.where((w) =>
        w.where('created_at', '<', createdAt).orWhere((x) => x.where('created_at', '=', createdAt).andWhere('id', '<', id)),
      );
    }
    const rows = (await builder
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(query.limit + 1)) as KeyRow[];
    const page = rows.slice(0, query.limit).map(toRecord);
    const last = page.at(-1);
    return { data: page, nextCursor: rows.length > query.limit && last ? encodeCursor(last.createdAt, last.id) : null };
  }
}
