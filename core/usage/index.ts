// Usage and the request log for the dashboard: the hourly rollup the audit writer maintains,
// the scope of a portal user's view, usage over time, and the request log.
export * from './request-log.js';
export * from './rollup.js';
export * from './scope.js';
export * from './usage-query.js';
export * from './model-observations.js';
export * from './conversations.js';
export * from './key-spend.js';
