export * from './periods.js';
export * from './scripts.js';
export * from './usage.js';
export * from './recovery.js';
export * from './organisation.js';
export * from './rate-window.js';
