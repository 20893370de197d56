export * from './record.js';
export * from './attempt-rows.js';
export * from './buffer.js';
export * from './writer.js';
export * from './repository.js';
export { monthPartition, type AuditLogger } from './partitions.js';
export * from './journal.js';
