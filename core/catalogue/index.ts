export * from './credentials.js';
export * from './supplier-url.js';
export * from './repository.js';
export * from './live.js';
export * from './credential-pool.js';
