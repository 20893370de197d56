export * from './health-keys.js';
export * from './credential-events.js';
