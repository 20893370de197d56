export * from './health-keys.js';
