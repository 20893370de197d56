export * from './ledger.js';
export * from './mirror.js';
export * from './referenced-entries.js';
