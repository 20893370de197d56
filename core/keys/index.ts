export * from './secrets.js';
export * from './record.js';
export * from './repository.js';
export * from './change-feed.js';
export * from './announcer.js';
