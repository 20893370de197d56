export * from './database.js';
export * from './data-dir-lock.js';
