// A gateway's audit writer in its own process, for the crash test in writer-recovery.test.ts:
// it prints `in-batch` from inside its first transaction (rows inserted, not committed) and
// then hangs there until the test SIGKILLs it.
import knexFactory from 'knex';
import { RedisStore } from '../store/redis-store.js';
import { AuditWriter } from './writer.js';

const store = new RedisStore(process.env.AUDIT_REDIS_URL ?? '', process.env.AUDIT_PREFIX ?? '');
const knex = knexFactory({ client: 'pg', connection: process.env.AUDIT_DATABASE_URL ?? '', pool: { min: 0, max: 1 } });
const writer = new AuditWriter(store, knex, {
  consumer: 'doomed',
  blockMs: 100,
  onBatch: async () => {
    process.stdout.write('in-batch\n');
    await new Promise(() => undefined);
  },
});
await writer.start();
