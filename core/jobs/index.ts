export * from './runner.js';
