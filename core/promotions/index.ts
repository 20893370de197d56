export * from './grants.js';
