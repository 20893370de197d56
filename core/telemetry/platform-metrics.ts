import { Counter, type Registry } from 'prom-client';

/** Failures of the shared stores, counted the same way by every deployable. */
export interface PlatformMetrics {
  /** Store (Redis or in-process) commands that failed, by Store method name. */
  storeErrors: Counter<'operation'>;
  /** PostgreSQL queries that failed, by SQLSTATE class (two characters, or `none` when the driver gave none). */
  databaseErrors: Counter<'class'>;
}

/** Registers the store and database error counters on a deployable's registry. */
export function createPlatformMetrics(registry: Registry): PlatformMetrics {
  return {
    storeErrors: new Counter({
      name: 'svc_store_errors_total',
      help: 'Store (Redis or in-process) commands that failed, by operation',
      labelNames: ['operation'],
      registers: [registry],
    }),
    databaseErrors: new Counter({
      name: 'svc_db_errors_total',
      help: 'PostgreSQL queries that failed, by SQLSTATE class',
      labelNames: ['class'],
      registers: [registry],
    }),
  };
}

/** The SQLSTATE class of a database error (`08` connection, `23` constraint…), bounded for a label. */
export function sqlStateClassLabel(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code.slice(0, 2) : 'none';
}
