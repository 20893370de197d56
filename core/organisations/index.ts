export * from './administration.js';
export * from './departments.js';
