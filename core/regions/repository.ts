import { isDeepStrictEqual } from 'node:util';
import type { Knex } from 'knex';
import type { RegionFailurePolicy, RegionPolicyRecord, RegionRule } from './policy.js';

interface RegionPolicyRow {
  name: string;
  regions: RegionRule[];
  failure_policy: RegionFailurePolicy;
  updated_at: Date;
}

function toRecord(row: RegionPolicyRow): RegionPolicyRecord {
  return { name: row.name, regions: row.regions, failurePolicy: row.failure_policy };
}

/** Region policies in PostgreSQL, the system of record the gateway loads them from. */
export class RegionPolicyRepository {
  constructor(private readonly knex: Knex) {}

  /** Every policy, by name. */
  async list(): Promise<RegionPolicyRecord[]> {
    const rows = (await this.knex<RegionPolicyRow>('region_policies').select('*').orderBy('name')) as RegionPolicyRow[];
    return rows.map(toRecord);
  }

  /** One policy, or undefined. */
  async find(name: string): Promise<RegionPolicyRecord | undefined> {
    const row = await this.knex<RegionPolicyRow>('region_policies').where({ name }).first();
    return row ? toRecord(row as RegionPolicyRow) : undefined;
  }

  /** Inserts or replaces a policy; returns whether the stored policy changed (callers announce only then). */
  async save(record: RegionPolicyRecord): Promise<boolean> {
    const current = await this.find(record.name);
    if (current && isDeepStrictEqual(current, record)) return false;
    await this.knex('region_policies')
      .insert({ name: record.name, regions: JSON.stringify(record.regions), failure_policy: record.failurePolicy, updated_at: new Date() })
      .onConflict('name')
      .merge();
    return true;
  }

  /** Deletes a policy; true when one was deleted. */
  async delete(name: string): Promise<boolean> {
    return (await this.knex('region_policies').where({ name }).delete()) > 0;
  }
}
