export * from './calendar.js';
export * from './within.js';
