import type { Logger } from 'pino';
import { AuditWriter, type AuditRecord } from '../../../core/audit/index.js';
import type { Settings } from '../../../core/config/index.js';
import { auditWriterReplyBounds, databaseTargetFromSettings, openDatabase } from '../../../core/db/index.js';
import { bindAtStart, openStore } from '../../../core/store/index.js';
import { WalletLedger } from '../../../core/wallets/index.js';

/** An audit writer with its own database pool and store connection, as a thread or process runs it. */
export interface OwnAuditWriter {
  writer: AuditWriter;
  /** Stops the writer (its current batch finishes) and closes its connections. */
  close(): Promise<void>;
}

/**
 * Opens PostgreSQL and the store from the settings and starts an AuditWriter on them, with the
 * wallet debits in each batch's transaction, exactly as the serving thread's writer does. The
 * schema is the caller's business (the gateway migrated before starting a thread).
 */
export async function openOwnAuditWriter(
  settings: Settings,
  options: { consumer: string; logger: Logger; onWritten?: (records: AuditRecord[]) => void },
): Promise<OwnAuditWriter> {
  // A writer needs few connections: one transaction at a time, plus a partition check.
  const target = databaseTargetFromSettings({ ...settings, SVC_DB_POOL_MAX: 2 });
  // A lost reply stalls the writer for seconds, then its connection is replaced (core/db/lost-replies.ts).
  const database = await openDatabase(target.kind === 'postgres' ? { ...target, replyBounds: auditWriterReplyBounds } : target);
  // Fail at start, with the reason, rather than in the writer's first retries.
  await database.knex.raw('select 1').catch(async (error: unknown) => {
    await database.close();
    throw error;
  });
  const store = openStore(settings);
  // The writer moves counters and debits between the two: they must belong to one installation.
  await bindAtStart(database, store, {
    rebind: settings.SVC_STORE_REBIND,
    warn: (message) => options.logger.warn(message),
    owned: { store: true, database: true },
  });
  const writer = new AuditWriter(store, database.knex, {
    consumer: options.consumer,
    logger: options.logger,
    onBatch: WalletLedger.recordAuditDebits,
    ...(options.onWritten && { onWritten: options.onWritten }),
  });
  try {
    await writer.start();
  } catch (error) {
    await store.close();
    await database.close();
    throw error;
  }
  return {
    writer,
    close: async () => {
      await writer.stop();
      await store.close();
      await database.close();
    },
  };
}
