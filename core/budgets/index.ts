export * from './policies.js';
