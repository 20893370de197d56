export * from './policy.js';
export * from './repository.js';
export * from './report.js';
