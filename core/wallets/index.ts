export * from './ledger.js';
export * from './referenced-entries.js';
