export * from './administration.js';
