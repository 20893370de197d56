export * from './periods.js';
export * from './scripts.js';
export * from './usage.js';
export * from './recovery.js';
export * from './spend-groups.js';
export * from './rate-window.js';
export * from './leases.js';
